"""Numba loops over rank ranges of one pair: evaluate positions, pack and count values.

Values live in "code" arrays, 2 bits per position packed 32 to a uint64 word:

    UNKNOWN = 0   not (yet) decided; at the fixpoint this is DRAW
    WIN     = 1   the side to move wins
    LOSS    = 2   the side to move loses

The same encoding serves a pair being solved and a finished dependency layer
(where 0 means DRAW), so a child's value is one 2-bit read whichever layer it is in:
one cache miss per child instead of two (win and draw bitsets).

Kernels take arrays and integers only; they never see a URL, a dict or a Dask object.
"""
from __future__ import annotations

import numpy as np
from numba import literally, njit

from .rules import (MOVE_EMPTY, MOVE_WIN, child_rank, landing, rank, successor, unmove_board, unmove_rank,
                    unmove_specs, unrank)

UNKNOWN = 0
WIN = 1
LOSS = 2
# Only in a frontier round's scratch array: re-checked this round, still undecided
# (so a position with several new WIN children is re-checked once).
CHECKED = 3
# A frontier round walks to its next source with the odometer when it is at most
# this many ranks ahead (a step costs a few ns, an unrank about 50).
WALK = 12

# Capture targets are passed end to end in one array with a start per capture
# size (slot j: 2 (j + 1) stones): one compiled signature for every layer, and
# about a third faster than a tuple of arrays indexed at run time.
MAX_DEPS = 16

_EVEN = np.uint64(0x5555555555555555)
_U32 = np.uint64(0xFFFFFFFF)


_SPECIALIZED: dict = {}


def call_specialized(kernel, args, pits_at: int = 0):
    """Call a kernel compiled for a constant board size (args[pits_at] is `pits`).

    The kernels call numba.literally(pits), so numba compiles (and caches) one
    version per board size; calling the dispatcher from Python would redo the
    literal dispatch on every call, so the compiled entry point is looked up once
    per signature and called directly.
    """
    from numba import typeof, types

    sig = tuple(types.literal(a) if i == pits_at else typeof(a) for i, a in enumerate(args))
    entry = _SPECIALIZED.get((kernel, sig))
    if entry is None:
        kernel.compile(sig)
        entry = _SPECIALIZED[(kernel, sig)] = kernel.overloads[sig].entry_point
    return entry(*args)


@njit(cache=True, nogil=True)
def code_words(npos):
    """uint64 words holding npos 2-bit codes (never 0, so every array has a word)."""
    return max(1, (npos + 31) // 32)


def new_codes(npos: int) -> np.ndarray:
    return np.zeros(code_words(npos), dtype=np.uint64)


@njit(cache=True, nogil=True, inline="always")
def get_code(codes, index):
    return (codes[index >> 5] >> np.uint64((index & 31) << 1)) & np.uint64(3)


@njit(cache=True, nogil=True, inline="always")
def set_code(codes, index, code):
    codes[index >> 5] |= np.uint64(code) << np.uint64((index & 31) << 1)


@njit(cache=True, nogil=True, inline="always")
def opponent_stones(board, pits):
    total = 0
    for j in range(pits, 2 * pits):
        total += board[j]
    return total


@njit(cache=True, nogil=True, inline="always")
def evaluate(board, pits, win_kazan, k1, other, deps, dep_start, binom):
    """The value of one position given its children's current codes (SPEC.md min-max).

    WIN if some move wins at once or reaches a LOSS; LOSS if every move reaches a WIN
    (so also when there is no move); UNKNOWN otherwise.
    """
    opponent = opponent_stones(board, pits)
    all_win = True
    for pit in range(pits):
        outcome, captured, laps, rest, keep, last = landing(board, opponent, pit, pits, k1, win_kazan)
        if outcome == MOVE_EMPTY:
            continue
        if outcome == MOVE_WIN:
            return WIN
        child = child_rank(board, pit, pits, binom, captured, laps, rest, keep, last)
        if captured == 0:
            code = get_code(other, child)
        else:
            code = get_code(deps, dep_start[captured // 2 - 1] + child)
        if code == LOSS:
            return WIN
        if code != WIN:
            all_win = False
    return LOSS if all_win else UNKNOWN


@njit(cache=True, nogil=True, inline="always")
def first_round_value(board, pits, win_kazan, k1, deps, dep_start, binom):
    """evaluate() for round 0, when no position of the paired layer is decided yet:
    a quiet move then leads to an UNKNOWN child, so only captures need a child rank
    (in a finished layer). Most moves are quiet, so this is much cheaper. Kept apart
    from evaluate() (not a flag of it) so that neither hot loop carries the other's
    branches."""
    opponent = opponent_stones(board, pits)
    all_win = True
    for pit in range(pits):
        outcome, captured, laps, rest, keep, last = landing(board, opponent, pit, pits, k1, win_kazan)
        if outcome == MOVE_EMPTY:
            continue
        if outcome == MOVE_WIN:
            return WIN
        if captured == 0:
            all_win = False
            continue
        child = child_rank(board, pit, pits, binom, captured, laps, rest, keep, last)
        code = get_code(deps, dep_start[captured // 2 - 1] + child)
        if code == LOSS:
            return WIN
        if code != WIN:
            all_win = False
    return LOSS if all_win else UNKNOWN


@njit(cache=True, nogil=True, inline="always")
def every_move_reaches_win(board, pits, win_kazan, k1, other, deps, dep_start, binom):
    """True when every move leads to a WIN for the opponent (the position is a LOSS),
    stopping at the first move that does not. A position that has no move also
    qualifies, but frontier rounds never ask about one (it has no child).

    This repeats evaluate's loop on purpose: sharing a helper that returns the
    child's code (or "no move" / "wins at once") made numba's code for the sweep
    about 60% slower (measured on pair 16-16)."""
    opponent = opponent_stones(board, pits)
    for pit in range(pits):
        outcome, captured, laps, rest, keep, last = landing(board, opponent, pit, pits, k1, win_kazan)
        if outcome == MOVE_EMPTY:
            continue
        if outcome == MOVE_WIN:
            return False
        child = child_rank(board, pit, pits, binom, captured, laps, rest, keep, last)
        if captured == 0:
            code = get_code(other, child)
        else:
            code = get_code(deps, dep_start[captured // 2 - 1] + child)
        if code != WIN:
            return False
    return True


@njit(cache=True, nogil=True)
def sweep_range(pits, win_kazan, k1, stones, lo, hi, own, other, deps, dep_start, binom, out, out_lo,
                other_empty):
    """Evaluate every undecided position of layer (k1, k2) with rank in [lo, hi).

    own:   codes of this layer (only read, to skip decided positions);
    other: codes of the paired layer (k2, k1), where non-capturing moves lead;
    deps:  the capture targets' codes end to end (PairState.bundle), where layer
           (k2, k1 + 2 (j + 1)) starts at position dep_start[j];
    out:   where a new decision for rank x is OR-ed, at index x - out_lo. Passing
           `own` with out_lo = 0 decides in place (later positions see it at once);
           a separate array gives rounds that only use earlier rounds' values;
    other_empty: no position of the paired layer is decided yet (round 0).
    Returns (new wins, new losses, positions evaluated = undecided before).
    """
    # Compile one version per board size: with `pits` a constant, the short loops
    # over pits unroll and `% n` stops being a division (about twice as fast).
    literally(pits)
    n = 2 * pits
    board = np.empty(n, np.int64)
    new_win = 0
    new_loss = 0
    evaluated = 0
    if lo >= hi:
        return new_win, new_loss, evaluated
    unrank(lo, stones, binom, board)
    for x in range(lo, hi):
        if get_code(own, x) == UNKNOWN:
            evaluated += 1
            if other_empty:
                code = first_round_value(board, pits, win_kazan, k1, deps, dep_start, binom)
            else:
                code = evaluate(board, pits, win_kazan, k1, other, deps, dep_start, binom)
            if code == WIN:
                set_code(out, x - out_lo, WIN)
                new_win += 1
            elif code == LOSS:
                set_code(out, x - out_lo, LOSS)
                new_loss += 1
        if x + 1 < hi:
            successor(board)
    return new_win, new_loss, evaluated


@njit(cache=True, nogil=True)
def frontier_range(pits, win_kazan, k1, stones, fresh, lo, hi, scratch, other, deps, dep_start, binom):
    """Re-evaluate the predecessors of positions decided in the previous round.

    fresh: codes over the paired layer (k2, k1) holding only its positions decided in
    the previous round; those with rank in [lo, hi) are this call's sources. Their
    predecessors (by un-moves) lie in this layer (k1, k2); `other` holds the paired
    layer's codes (where this layer's quiet moves lead) and deps its capture
    targets, as in sweep_range. A predecessor of a LOSS is a WIN; a predecessor of a
    WIN is evaluated again, once however many new WIN children it has. `scratch`
    holds a copy of this layer's codes on entry (one random read per predecessor
    tells both "decided before" and "seen this round"); decisions are OR-ed into
    it, and re-checked positions still undecided get CHECKED (fresh_codes() turns
    it into this round's decisions). Returns (new wins, new losses, evaluated).
    Only positions with a changed child can change, so this decides exactly what a
    full sweep of the round would.
    """
    literally(pits)  # one version per board size, as in sweep_range
    n = 2 * pits
    child = np.empty(n, np.int64)
    after = np.empty(n, np.int64)
    board = np.empty(n, np.int64)
    specs = np.empty((pits * (n + 1), 3), np.int64)
    wins = 0
    losses = 0
    evaluated = 0
    at = -1 - WALK  # the rank `child` holds
    for w in range(lo >> 5, (hi + 31) >> 5):
        word = fresh[w]
        if word == 0:
            continue
        for j in range(32):
            source_code = (word >> np.uint64(2 * j)) & np.uint64(3)
            if source_code == UNKNOWN:
                continue
            target = w * 32 + j
            if target < lo or target >= hi:
                continue
            if target - at <= WALK:
                # Sources come in rank order: the odometer reaches a close one faster.
                while at < target:
                    successor(child)
                    at += 1
            else:
                unrank(target, stones, binom, child)
                at = target
            count = unmove_specs(child, pits, after, specs)
            for p in range(count):
                pit = specs[p, 0]
                laps = specs[p, 1]
                rest = specs[p, 2]
                x = unmove_rank(after, pits, pit, laps, rest, binom)
                seen = get_code(scratch, x)
                if seen == WIN or seen == LOSS:
                    continue
                if source_code == LOSS:
                    # A CHECKED mark (re-checked for another child) gives way to the WIN.
                    scratch[x >> 5] &= ~(np.uint64(3) << np.uint64((x & 31) << 1))
                    set_code(scratch, x, WIN)
                    wins += 1
                elif seen == UNKNOWN:
                    # Only a LOSS can be new here: a LOSS child would have been decided
                    # last round at the latest, and then it is a source of its own that
                    # makes this position a WIN.
                    evaluated += 1
                    unmove_board(after, pits, pit, laps, rest, board)
                    if every_move_reaches_win(board, pits, win_kazan, k1, other, deps, dep_start, binom):
                        set_code(scratch, x, LOSS)
                        losses += 1
                    else:
                        set_code(scratch, x, CHECKED)
    return wins, losses, evaluated


@njit(cache=True, nogil=True)
def fresh_codes(scratch, own):
    """Turn a frontier round's scratch into its decisions, in place: what it added
    to `own`, CHECKED marks dropped."""
    for w in range(scratch.shape[0]):
        x = scratch[w] ^ own[w]
        both = x & (x >> np.uint64(1)) & _EVEN
        scratch[w] = x & ~(both | (both << np.uint64(1)))


@njit(cache=True, nogil=True)
def set_codes(codes, ranks, values):
    """Record sparse decisions (ranks may repeat with the same value)."""
    for i in range(ranks.shape[0]):
        set_code(codes, ranks[i], values[i])


@njit(cache=True, nogil=True)
def merge_codes_at(codes, lo, chunk, count):
    """OR a chunk's codes (position lo + i at chunk index i, i < count) into codes.
    lo need not be a multiple of 32, so chunk sizes are free."""
    shift = lo & 31
    if shift == 0:
        first = lo >> 5
        for w in range(code_words(count)):
            codes[first + w] |= chunk[w]
        return
    for i in range(count):
        code = get_code(chunk, i)
        if code != 0:
            set_code(codes, lo + i, code)


@njit(cache=True, nogil=True)
def stamp_distances(dtz, chunk, lo, count, value):
    """dtz[lo + i] = value for every decided position i < count of a chunk-local code array."""
    for w in range(code_words(count)):
        x = chunk[w]
        if x == 0:
            continue
        for j in range(32):
            if (x >> np.uint64(2 * j)) & np.uint64(3) != 0:
                i = w * 32 + j
                if i < count:
                    dtz[lo + i] = value


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
def bitsets_to_codes(win32, draw32, npos, codes):
    """Inverse of codes_to_bitsets for a whole layer; returns how many positions have
    both bits set (a corrupt file: the caller refuses it)."""
    clashes = 0
    for w in range(codes.shape[0]):
        mask = _valid_mask(npos, w)
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



@njit(cache=True, nogil=True)
def no_move_ranks(pits, stones, binom, out):
    """Ranks of the positions whose mover has no stone (distance 0: SPEC.md).

    They are the boards with the stones all on the opponent's side, so they are
    enumerated directly (every composition of `stones` into `pits` pits) instead
    of walking the layer. `out` needs C(stones + pits - 1, pits - 1) entries.
    """
    n = 2 * pits
    side = np.empty(pits, np.int64)
    board = np.zeros(n, np.int64)
    count = binom[stones + pits - 1, pits - 1]
    for i in range(count):
        unrank(i, stones, binom, side)
        for j in range(pits):
            board[pits + j] = side[j]
        out[i] = rank(board, binom)
    return count
