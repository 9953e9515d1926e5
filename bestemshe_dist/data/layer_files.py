"""A layer's values (2-bit codes) to and from its two files, win and draw (pure, no I/O)."""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from ..errors import FormatError
from ..naming import layer_file, layer_name
from ..solve import code_arrays
from ..solve.code_arrays import Codes
from . import format as fmt

# The distance files are this project's own (the win/draw files keep the published
# level 19), so their level is chosen by measurement (benchmarks/dtz_level_bench.py
# on the 59 distance files of k1 + k2 >= 22 solved first, 104 blocks, one core):
# level 19 took 133.7 s, 9.7x the level-19 win/draw files of the same layers, for
# 54.0 MB; level 1 took 0.8 s (0.06x) for 71.3 MB, smaller than level 3's 71.5 MB
# and within 7% of level 6's (3.7 s); decompression 0.28-0.33 s at every level.
DTZ_LEVEL = 1

Bits: TypeAlias = npt.NDArray[np.uint8]  # a bitset as bytes, LSB first
Counts: TypeAlias = tuple[int, int, int]  # (wins, draws, losses)


def split_codes(codes: Codes, npos: int) -> tuple[Bits, Bits, Counts]:
    """(win bitset, draw bitset, (wins, draws, losses)) as whole 4 MiB blocks of bytes."""
    nbytes = fmt.blocks_for_bits(npos) * fmt.BLOCK_BYTES
    win = np.zeros(nbytes, dtype=np.uint8)
    draw = np.zeros(nbytes, dtype=np.uint8)
    words = code_arrays.code_words(npos)
    wins, draws, losses = code_arrays.codes_to_bitsets(
        codes[:words], npos, 0, win.view(np.uint32)[:words], draw.view(np.uint32)[:words]
    )
    return win, draw, (int(wins), int(draws), int(losses))


def encode_layer(codes: Codes, npos: int, threads: int = 1) -> tuple[bytes, bytes, Counts]:
    """(win file bytes, draw file bytes, (wins, draws, losses))."""
    win, draw, counts = split_codes(codes, npos)
    return fmt.encode_bitset(win, npos, threads), fmt.encode_bitset(draw, npos, threads), counts


def decode_layer(win_file: bytes, draw_file: bytes, npos: int, k1: int, k2: int) -> Codes:
    """Codes of a layer from its two files, refusing a position marked both win and draw."""
    win = fmt.decode_file(win_file, layer_file(k1, k2, "win"), npos)
    draw = fmt.decode_file(draw_file, layer_file(k1, k2, "draw"), npos)
    return codes_from_bitsets(win, draw, npos, k1, k2)


def codes_from_bitsets(
    win: Bits,
    draw: Bits,
    npos: int,
    k1: int,
    k2: int,
    out: Codes | None = None,
    first_word: int = 0,
) -> Codes:
    """Codes from win and draw bitsets: the whole layer, or (given `out` and
    `first_word`) the len(out) words from word first_word on, the bitsets holding
    just those positions. A position marked both win and draw is refused."""
    words = code_arrays.code_words(npos) if out is None else out.shape[0]
    padded = words * 4
    win32 = _padded(win, padded).view(np.uint32)
    draw32 = _padded(draw, padded).view(np.uint32)
    codes = code_arrays.new_codes(npos) if out is None else out
    clashes = code_arrays.bitsets_to_codes(win32, draw32, npos, codes, first_word)
    if clashes:
        raise FormatError(f"layer {layer_name(k1, k2)}: {clashes} positions are marked both win and draw.")
    return codes


def _padded(bits: Bits, nbytes: int) -> Bits:
    if bits.shape[0] >= nbytes:
        return np.ascontiguousarray(bits[:nbytes])
    out = np.zeros(nbytes, dtype=np.uint8)
    out[: bits.shape[0]] = bits
    return out


def distance_width(max_distance: int) -> int:
    """Bytes per position of a distance table: one if every distance fits."""
    return 1 if max_distance <= 0xFF else 2


def distance_bytes(dtz: npt.NDArray[np.integer[Any]], width: int) -> Bits:
    """Distances as little-endian unsigned bytes, `width` per position."""
    return np.ascontiguousarray(dtz.astype("<u1" if width == 1 else "<u2")).view(np.uint8)


def encode_distances(dtz: npt.NDArray[np.integer[Any]], width: int) -> bytes:
    """The layer_<k1>_<k2>_dtz.bin file: the byte table in the same block format."""
    raw = distance_bytes(dtz, width)
    return fmt.encode_bitset(raw, 8 * raw.shape[0], level=DTZ_LEVEL)


def decode_distances(data: bytes, npos: int, width: int, k1: int, k2: int) -> npt.NDArray[np.int64]:
    raw = fmt.decode_file(data, layer_file(k1, k2, "dtz"), 8 * width * npos)
    return raw.view("<u1" if width == 1 else "<u2").astype(np.int64)
