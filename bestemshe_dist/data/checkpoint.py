"""A round's checkpoint part (a Delta: one chunk's decisions of one layer) as bytes.

Written and read without the copies np.save / np.load into a
BytesIO make: a dense part of 53M positions (13 MB) took 76 ms to write and
66 ms to read that way, 32 and 23 ms this way, and rounds read each part at
least twice (the host's sync, the tasks' sources).

The layout, zstd-compressed at a fast level: a JSON line (layer, round, lo, hi, counts, dense or sparse), padded
to 64 bytes, then the arrays in .npy form (one dense code array, or ranks and
values).
"""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import numpy.typing as npt
import zstandard

from ..solve.pair import Delta

# zstd level of checkpoint parts: level 1 wrote a dense part of pair 8-12 in 32 ms
# (1.6 MB) where level 3 took 42 ms (1.7 MB); they are read back within minutes.
CHECKPOINT_LEVEL = 1


def encode_part(delta: Delta) -> bytes:
    """A round's part as checkpoint bytes."""
    meta = {
        "layer": list(delta.layer),
        "round": delta.round,
        "lo": delta.lo,
        "hi": delta.hi,
        "wins": delta.wins,
        "losses": delta.losses,
        "evaluations": delta.evaluations,
        "kind": "dense" if delta.dense is not None else "sparse",
    }
    arrays = (
        [delta.dense]
        if delta.dense is not None
        else [
            delta.ranks if delta.ranks is not None else np.zeros(0, np.int64),
            delta.values if delta.values is not None else np.zeros(0, np.uint8),
        ]
    )
    line = json.dumps(meta).encode()
    # Padded so the first array's data lands 64-byte aligned in the decompressed
    # bytes (.npy pads its own header likewise), and decode_part can use it in place.
    pieces: list[bytes | memoryview] = [line + b" " * (-(len(line) + 1) % 64) + b"\n"]
    for array in arrays:
        array = np.ascontiguousarray(array)
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, np.lib.format.header_data_from_array_1_0(array))
        pieces += [header.getvalue(), array.data.cast("B")]
    return zstandard.ZstdCompressor(level=CHECKPOINT_LEVEL).compress(b"".join(pieces))


def decode_part(data: bytes) -> Delta:
    """The Delta of checkpoint bytes (of this layout or the earlier, unpadded one)."""
    # A bytearray, so the arrays over it are writable: numba compiles a kernel
    # anew for read-only arrays (in a task's hot path, not at warm-up).
    raw = bytearray(zstandard.ZstdDecompressor().decompress(data))
    end = raw.index(b"\n")
    meta = json.loads(raw[:end])
    delta = Delta(
        tuple(meta["layer"]),
        meta["round"],
        meta["lo"],
        meta["hi"],
        wins=meta["wins"],
        losses=meta["losses"],
        evaluations=meta["evaluations"],
    )
    offset = end + 1

    def array() -> npt.NDArray[Any]:  # over raw: only the .npy header is copied
        nonlocal offset
        head = io.BytesIO(raw[offset : offset + 8 + 4 + 65535])
        version = np.lib.format.read_magic(head)
        read = (
            np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        )
        shape, _, dtype = read(head)
        out = np.frombuffer(raw, dtype, int(np.prod(shape)), offset + head.tell()).reshape(shape)
        offset += head.tell() + out.nbytes
        # numba compiles anew for unaligned arrays too (parts written before the
        # padding are copied once)
        return out if out.flags.aligned else out.copy()

    if meta["kind"] == "dense":
        delta.dense = array()
    else:
        delta.ranks = array()
        delta.values = array()
    return delta
