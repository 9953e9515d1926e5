"""Checksums of a layer's compressed frames: one sidecar file per layer.

The published file format has no checksum (its Zstandard frames are written
without one, and byte compatibility keeps it so), and bytes overwritten inside
a frame can still decompress into plausible bits. So every reader that answers
from a block checks it first against `layer_<k1>_<k2>.sums.json`, written
beside the layer's files:

    {"format": "bestemshe-checksums", "version": 1, "hash": "blake2b-128",
     "layer": [k1, k2],
     "files": {"win": {"bytes": N, "header": HEX, "frames": [HEX, ...]},
               "draw": {...}, "dtz": {...}}}

`header` covers the block count and offsets, `frames[i]` the compressed bytes
of block i, so one frame is checked without reading the rest of its file, and a
sidecar taken of another version of the file (stale) fails on the header.
The solver writes a sidecar with every layer and records it in the manifest
entry, which then makes it mandatory; `bestemshe-dist checksums URL` writes
sidecars for a tablebase that has none (the published dataset) from a copy the
user trusts.

Why BLAKE2b with a 16-byte digest: it is in Python's standard library, so no
reader (oracle, verifier, solver, a user's script) needs another dependency; it
is a cryptographic hash, so a checksum file kept beside a published copy also
detects deliberate edits, as SHA256SUMS do; and it releases the GIL. What it
costs, measured on this 2-core machine (benchmarks/checksum_bench.py on the
layers with k1 + k2 >= 28, 132 frames, 18 MB compressed): 0.95 GB/s of
compressed bytes, 36% of the time to decompress the same frames (they compress
about 30:1); a whole layer read and unpacked into codes takes 1.24x as long
checked; a cold probe 1.35 ms instead of 1.05 ms (the checksum file is one more
read); a probe of a cached block nothing. xxHash would take the hashing share
down to a few per cent, for a dependency of every reader; the solver and the
verifier spend their time elsewhere, so it was not worth one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import FormatError
from ..naming import layer_name, sums_file
from . import format as fmt
from .format import ByteView

HASH = "blake2b-128"
FORMAT = "bestemshe-checksums"
VERSION = 1
KINDS = ("win", "draw", "dtz")


def digest(data: ByteView) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True)
class FileSums:
    """What one layer file's pieces hash to: its size, header and every frame."""

    size: int
    header: str
    frames: tuple[str, ...]
    sidecar: str = field(default="its checksum file", compare=False)  # names it in errors

    @classmethod
    def of_file(cls, data: ByteView, name: str = "layer file") -> FileSums:
        """The checksums of a whole file (its header is validated first)."""
        view = memoryview(data).cast("B")
        offsets = fmt.parse_header(view, len(view), name)
        return cls(
            len(view),
            digest(view[: offsets[0]]),
            tuple(digest(view[offsets[b] : offsets[b + 1]]) for b in range(len(offsets) - 1)),
        )

    def check_header(self, head: ByteView, size: int, shown: str) -> None:
        """`head`: the file's first bytes (at least the whole header), `size` its size."""
        if size != self.size:
            how = "cut short" if size < self.size else "longer than it was"
            raise FormatError(
                f"{shown}: the file is {how} ({size} bytes, but {self.sidecar} was taken of "
                f"one of {self.size} bytes), so it is damaged or its checksums are stale."
            )
        hsize = fmt.header_size(len(self.frames))
        if len(head) < hsize or digest(memoryview(head)[:hsize]) != self.header:
            raise FormatError(
                f"{shown}: its header (block count and offsets) fails its checksum in "
                f"{self.sidecar}, so the file is damaged or its checksums are stale."
            )

    def check_frame(self, index: int, frame: ByteView, shown: str) -> None:
        if not 0 <= index < len(self.frames) or digest(frame) != self.frames[index]:
            raise FormatError(
                f"{shown}: block {index} fails its checksum ({HASH}): the file is damaged "
                "there, and nothing is read from that block."
            )

    def as_dict(self) -> dict[str, Any]:
        return {"bytes": self.size, "header": self.header, "frames": list(self.frames)}


@dataclass(frozen=True)
class LayerSums:
    layer: tuple[int, int]
    files: dict[str, FileSums]  # kind -> FileSums
    shown: str = field(default="its checksum file", compare=False)  # where it was read

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "format": FORMAT,
                "version": VERSION,
                "hash": HASH,
                "layer": list(self.layer),
                "files": {k: s.as_dict() for k, s in sorted(self.files.items())},
            },
            indent=1,
        ).encode()

    @classmethod
    def from_bytes(cls, raw: bytes, layer: tuple[int, int], shown: str) -> LayerSums:
        """Parse and validate a sidecar; `shown` names it in the one-sentence error."""
        try:
            doc = json.loads(raw)
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                raise ValueError("not a checksum file")
            if doc.get("hash") != HASH:
                raise ValueError(f"hash {doc.get('hash')!r} is not {HASH}")
            if tuple(doc.get("layer") or ()) != tuple(layer):
                raise ValueError(f"it is for layer {doc.get('layer')}")
            files: dict[str, FileSums] = {}
            for kind, item in doc["files"].items():
                if kind not in KINDS:
                    raise ValueError(f"unknown file kind {kind!r}")
                frames = tuple(str(f) for f in item["frames"])
                if not frames or any(len(f) != 32 for f in frames) or len(str(item["header"])) != 32:
                    raise ValueError(f"the {kind} entry's digests are malformed")
                files[kind] = FileSums(int(item["bytes"]), str(item["header"]), frames, shown)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise FormatError(
                f"{shown} is not a valid checksum file for layer "
                f"{layer_name(*layer)} ({str(exc).rstrip('.') or type(exc).__name__})."
            ) from None
        return cls(layer, files, shown)

    def of(self, kind: str, shown: str) -> FileSums:
        """The sums of one file (`shown` names it); a file the sidecar does not cover
        cannot be checked, which is a fault of its own."""
        sums = self.files.get(kind)
        if sums is None:
            raise FormatError(f"{shown}: {self.shown} has no checksums for it, so it cannot be checked.")
        return sums


def manifest_record(sums: LayerSums, data: bytes) -> dict[str, Any]:
    """What a manifest entry says of its layer's sidecar (its presence is then required)."""
    return {
        "hash": HASH,
        "file": sums_file(*sums.layer),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
