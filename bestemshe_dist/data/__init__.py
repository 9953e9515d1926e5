"""Bytes and where they live.

- format.py      the block file format: header, Zstandard frames (SPEC.md)
- layer_files.py a layer's values to and from its win and draw files, distance tables
- checksums.py   each frame's BLAKE2b checksum, the `.sums.json` sidecar
- sidecars.py    writing and checking sidecars for a whole tablebase
- checkpoint.py  a round's checkpoint part as bytes
- store.py       any fsspec URL: whole-object reads and atomic writes, the manifest
- lease.py       the one solve writing into a store
- blocks.py      the one block reader (oracle, verifier, dependency loading)
- cache.py       the one byte-budgeted, single-flight cache

May import: game/, solve/ (codes to and from bitsets) and the base modules.
Never run/, cluster/, watch/, oracle/ or verify/.
"""
