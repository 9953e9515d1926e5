"""2-bit code arrays: one position's value in 2 bits, 32 to a uint64 word (numba).

    UNKNOWN = 0   not (yet) decided; at the fixpoint this is DRAW
    WIN     = 1   the side to move wins
    LOSS    = 2   the side to move loses

The same encoding serves a pair being solved and a finished dependency layer
(where 0 means DRAW), so a child's value is one 2-bit read whichever layer it is in:
one cache miss per child instead of two (win and draw bitsets).

Here: reading and writing codes, a round array's decisions (take, clear, stamp,
list, merge), counts, synthetic layers, and the conversion to and from the file's
win and draw bitsets. The sweeps and frontier rounds that decide positions are in
kernels.py. Functions take arrays and integers only.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt
from numba import njit

# A code array as Python code holds it (the kernels take it as they get it).
Codes: TypeAlias = npt.NDArray[np.uint64]

UNKNOWN = 0
WIN = 1
LOSS = 2
# Only in a frontier round's scratch array: re-checked this round, still undecided
# (so a position with several new WIN children is re-checked once).
CHECKED = 3

_EVEN = np.uint64(0x5555555555555555)
_U32 = np.uint64(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def code_words(npos):
    """uint64 words holding npos 2-bit codes (never 0, so every array has a word)."""
    return max(1, (npos + 31) // 32)


def new_codes(npos: int) -> Codes:
    return np.zeros(code_words(npos), dtype=np.uint64)


@njit(cache=True, nogil=True, inline="always")
def get_code(codes, index):
    return (codes[index >> 5] >> np.uint64((index & 31) << 1)) & np.uint64(3)


@njit(cache=True, nogil=True, inline="always")
def set_code(codes, index, code):
    codes[index >> 5] |= np.uint64(code) << np.uint64((index & 31) << 1)


@njit(cache=True, nogil=True)
def clear_range(found, lo, hi):
    """Empty positions [lo, hi) of a round array."""
    if lo >= hi:
        return
    w = lo >> 5
    while w < ((hi + 31) >> 5):
        first, last = max(lo, w * 32), min(hi, w * 32 + 32)
        if first == w * 32 and last == w * 32 + 32:
            found[w] = np.uint64(0)
        else:
            for x in range(first, last):
                found[w] &= ~(np.uint64(3) << np.uint64((x & 31) << 1))
        w += 1


@njit(cache=True, nogil=True)
def stamp_range(dtz, dtz_lo, chunk, chunk_lo, count, value):
    """dtz[x - dtz_lo] = value for every decided position x = chunk_lo + i (i < count)
    of a chunk-local code array that falls in dtz's range."""
    dtz_hi = dtz_lo + dtz.shape[0]
    first = max(0, dtz_lo - chunk_lo)
    last = min(count, dtz_hi - chunk_lo)
    if first >= last:
        return
    for w in range(first >> 5, (last + 31) >> 5):
        x = chunk[w]
        if x == 0:
            continue
        for j in range(32):
            if (x >> np.uint64(2 * j)) & np.uint64(3) != 0:
                i = w * 32 + j
                if first <= i < last:
                    dtz[chunk_lo + i - dtz_lo] = value


@njit(cache=True, nogil=True)
def take_decisions(found, lo, hi, out, clear):
    """Copy the decisions (WIN, LOSS) of positions [lo, hi) of a round array into
    `out` (position lo + i at index i, zeros on entry), CHECKED marks dropped; with
    `clear`, also leave the range empty for the next round. No task may run on
    `found` meanwhile. Returns (wins, losses)."""
    wins = 0
    losses = 0
    if lo >= hi:
        return wins, losses
    if lo & 31:
        # Chunk edges inside a word (chunk sizes are free): position by position.
        for x in range(lo, hi):
            code = get_code(found, x)
            if code != UNKNOWN:
                if code == WIN or code == LOSS:
                    set_code(out, x - lo, code)
                    if code == WIN:
                        wins += 1
                    else:
                        losses += 1
                if clear:
                    found[x >> 5] &= ~(np.uint64(3) << np.uint64((x & 31) << 1))
        return wins, losses
    first = lo >> 5
    for w in range(first, (hi + 31) >> 5):
        x = found[w]
        if x == 0:
            continue
        left = hi - w * 32
        mask = ~np.uint64(0) if left >= 32 else (np.uint64(1) << np.uint64(2 * left)) - np.uint64(1)
        x &= mask
        both = x & (x >> np.uint64(1)) & _EVEN
        keep = x & ~(both | (both << np.uint64(1)))
        out[w - first] = keep
        wins += _popcount(keep & _EVEN)
        losses += _popcount((keep >> np.uint64(1)) & _EVEN)
        if clear:
            found[w] &= ~mask
    return wins, losses


@njit(cache=True, nogil=True, inline="always")
def _mix(z):
    """splitmix64's finaliser: a well-spread 64-bit hash of z."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def synthetic_codes(codes, npos, seed, salt, win_below, loss_below):
    """Deterministic pseudo-random values for npos positions (a synthetic dependency
    layer): position x is WIN when its 32-bit hash h (of seed, salt, x) is below
    win_below, else LOSS below loss_below, else UNKNOWN (a draw)."""
    key = _mix(np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(salt))
    for w in range(code_words(npos)):
        word = np.uint64(0)
        for j in range(32):
            x = w * 32 + j
            if x >= npos:
                break
            h = _mix(key + np.uint64(x)) >> np.uint64(32)
            if h < win_below:
                word |= np.uint64(WIN) << np.uint64(2 * j)
            elif h < loss_below:
                word |= np.uint64(LOSS) << np.uint64(2 * j)
        codes[w] = word


@njit(cache=True, nogil=True)
def set_codes(codes, ranks, values):
    """Record sparse decisions (ranks may repeat with the same value); returns how
    many positions were undecided before."""
    new = 0
    for i in range(ranks.shape[0]):
        if get_code(codes, ranks[i]) == UNKNOWN:
            new += 1
        set_code(codes, ranks[i], values[i])
    return new


@njit(cache=True, nogil=True)
def merge_codes_at(codes, lo, chunk, count):
    """OR a chunk's codes (position lo + i at chunk index i, i < count) into codes.
    lo need not be a multiple of 32, so chunk sizes are free. Returns how many of
    them were undecided before (another host may have decided some already)."""
    new = 0
    shift = lo & 31
    if shift == 0:
        first = lo >> 5
        for w in range(code_words(count)):
            x = chunk[w]
            if x == 0:
                continue
            old = codes[first + w]
            seen = (old | (old >> np.uint64(1))) & _EVEN
            new += _popcount((x | (x >> np.uint64(1))) & _EVEN & ~seen)
            codes[first + w] = old | x
        return new
    for i in range(count):
        code = get_code(chunk, i)
        if code != 0:
            if get_code(codes, lo + i) == UNKNOWN:
                new += 1
            set_code(codes, lo + i, code)
    return new


@njit(cache=True, nogil=True)
def decided_in(chunk, count, lo, ranks, values):
    """List the decided positions (WIN or LOSS; not CHECKED) of a chunk-local code
    array, ranks offset by lo, in rank order; ranks/values must have room for every
    decision. Returns how many."""
    found = 0
    for w in range(code_words(count)):
        x = chunk[w]
        if x == 0:
            continue
        for j in range(32):
            code = (x >> np.uint64(2 * j)) & np.uint64(3)
            if code == WIN or code == LOSS:
                i = w * 32 + j
                if i < count:
                    ranks[found] = lo + i
                    values[found] = code
                    found += 1
    return found


@njit(cache=True, nogil=True, inline="always")
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(cache=True, nogil=True, inline="always")
def _compact_even(x):
    """Gather bits 0, 2, 4, ... 62 of x into bits 0..31."""
    x &= _EVEN
    x = (x | (x >> np.uint64(1))) & np.uint64(0x3333333333333333)
    x = (x | (x >> np.uint64(2))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    x = (x | (x >> np.uint64(4))) & np.uint64(0x00FF00FF00FF00FF)
    x = (x | (x >> np.uint64(8))) & np.uint64(0x0000FFFF0000FFFF)
    x = (x | (x >> np.uint64(16))) & _U32
    return x


@njit(cache=True, nogil=True, inline="always")
def _spread_even(x):
    """Inverse of _compact_even: bit i of x (i < 32) goes to bit 2 i."""
    x &= _U32
    x = (x | (x << np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    x = (x | (x << np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    x = (x | (x << np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    x = (x | (x << np.uint64(2))) & np.uint64(0x3333333333333333)
    x = (x | (x << np.uint64(1))) & _EVEN
    return x


@njit(cache=True, nogil=True)
def _valid_mask(npos, word):
    """Mask of the even bits of `word` that belong to positions below npos."""
    left = npos - word * 32
    if left >= 32:
        return _EVEN
    return _EVEN & ((np.uint64(1) << np.uint64(2 * left)) - np.uint64(1))


@njit(cache=True, nogil=True)
def codes_to_bitsets(codes, npos, first_word, win32, draw32):
    """Split codes into the file's win and draw bitsets (uint32 views, LSB first).

    codes[w] covers positions 32 (first_word + w) ...; win32/draw32 are indexed the same
    way as codes. Positions at or past npos get neither bit. Returns (win, draw, loss).
    """
    wins = 0
    draws = 0
    losses = 0
    for w in range(codes.shape[0]):
        mask = _valid_mask(npos, first_word + w)
        x = codes[w]
        low = x & mask
        high = (x >> np.uint64(1)) & mask
        draw = ~(x | (x >> np.uint64(1))) & mask
        win32[w] = np.uint32(_compact_even(low))
        draw32[w] = np.uint32(_compact_even(draw))
        wins += _popcount(low)
        draws += _popcount(draw)
        losses += _popcount(high & ~low)
    return wins, draws, losses


@njit(cache=True, nogil=True)
def bitsets_to_codes(win32, draw32, npos, codes, first_word):
    """Inverse of codes_to_bitsets: codes[w] gets the positions of word first_word + w
    of the layer, from win32[w] and draw32[w] (so a layer can be unpacked a block at
    a time, straight into a shared array). Returns how many positions have both
    bits set (a corrupt file: the caller refuses it)."""
    clashes = 0
    for w in range(codes.shape[0]):
        mask = _valid_mask(npos, first_word + w)
        win = _spread_even(np.uint64(win32[w])) & mask
        draw = _spread_even(np.uint64(draw32[w])) & mask
        clashes += _popcount(win & draw)
        loss = ~(win | draw) & mask
        codes[w] = win | (loss << np.uint64(1))
    return clashes


@njit(cache=True, nogil=True)
def merge_codes(codes, first_word, delta):
    """OR a chunk's new decisions (delta, starting at word first_word) into codes."""
    for w in range(delta.shape[0]):
        codes[first_word + w] |= delta[w]


@njit(cache=True, nogil=True)
def count_codes(codes, npos):
    """(wins, losses, undecided) among the first npos positions."""
    wins = 0
    losses = 0
    for w in range(codes.shape[0]):
        mask = _valid_mask(npos, w)
        x = codes[w]
        wins += _popcount(x & mask)
        losses += _popcount((x >> np.uint64(1)) & mask)
    return wins, losses, npos - wins - losses
