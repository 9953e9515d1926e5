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

from ..game.rules import (
    MOVE_EMPTY,
    MOVE_WIN,
    child_rank,
    landing,
    rank,
    successor,
    unmove_board,
    unmove_rank,
    unmove_specs,
    unrank,
)
from .atomics import claim_code
from .prefetch import prefetch

UNKNOWN = 0
WIN = 1
LOSS = 2
# Only in a frontier round's scratch array: re-checked this round, still undecided
# (so a position with several new WIN children is re-checked once).
CHECKED = 3
# A frontier round walks to its next source with the odometer when it is at most
# this many ranks ahead (a step costs a few ns, an unrank about 50).
WALK = 12
# A sweep computes and prefetches the children of this many undecided positions
# ahead of the one it decides (a power of two).
AHEAD = 8
# A frontier round keeps this many predecessors between ranking and reading their
# codes, and this many re-checks between ranking and reading their children
# (powers of two).
PREDS = 16
CHECKS = 8

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
def _queue_children(board, pits, win_kazan, k1, other, deps, dep_start, binom, other_empty, kids, slot):
    """The first half of a position's evaluation in a sweep (SPEC.md min-max): each
    move's child, as an index into `other` (2 i) or `deps` (2 i + 1), stored in
    kids[slot, :count] and prefetched.
    Returns (count, flag): flag 1 when a move wins at once (then no child matters),
    2 when a quiet move leads into the undecided paired layer (round 0: the position
    cannot be a LOSS), else 0."""
    opponent = opponent_stones(board, pits)
    count = 0
    flag = 0
    for pit in range(pits):
        outcome, captured, laps, rest, keep, last = landing(board, opponent, pit, pits, k1, win_kazan)
        if outcome == MOVE_EMPTY:
            continue
        if outcome == MOVE_WIN:
            return 0, 1
        if captured == 0:
            if other_empty:
                flag = 2
                continue
            child = child_rank(board, pit, pits, binom, captured, laps, rest, keep, last)
            kids[slot, count] = child << 1
            prefetch(other, child >> 5)
        else:
            child = dep_start[captured // 2 - 1] + child_rank(
                board, pit, pits, binom, captured, laps, rest, keep, last
            )
            kids[slot, count] = (child << 1) | 1
            prefetch(deps, child >> 5)
        count += 1
    return count, flag


@njit(cache=True, nogil=True, inline="always")
def _decide_queued(kids, slot, count, flag, other, deps):
    """The second half: WIN if some move wins at once or reaches a LOSS; LOSS if
    every move reaches a WIN (so also when there is no move); UNKNOWN otherwise."""
    if flag == 1:
        return WIN
    all_win = flag == 0
    for i in range(count):
        kid = kids[slot, i]
        if kid & 1:
            code = get_code(deps, kid >> 1)
        else:
            code = get_code(other, kid >> 1)
        if code == LOSS:
            return WIN
        if code != WIN:
            all_win = False
    return LOSS if all_win else UNKNOWN


@njit(cache=True, nogil=True, inline="always")
def _decide_into(out, out_lo, ranks, kids, counts, flags, slot, other, deps):
    """Decide the queued position in `slot` and record a decision in `out`."""
    code = _decide_queued(kids, slot, counts[slot], flags[slot], other, deps)
    if code != UNKNOWN:
        set_code(out, ranks[slot] - out_lo, code)
    return code


@njit(cache=True, nogil=True)
def sweep_range(
    pits, win_kazan, k1, stones, lo, hi, own, other, deps, dep_start, binom, out, out_lo, other_empty
):
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

    Software-pipelined: a position's children are computed and prefetched AHEAD
    undecided positions before its value is read from them, so the core computes
    while many reads are in flight. Values are still read and decided in rank
    order, so an in-place sweep sees exactly what the one-at-a-time loop saw.
    """
    # Compile one version per board size: with `pits` a constant, the short loops
    # over pits unroll and `% n` stops being a division (about twice as fast).
    literally(pits)
    n = 2 * pits
    board = np.empty(n, np.int64)
    ranks = np.empty(AHEAD, np.int64)
    counts = np.empty(AHEAD, np.int64)
    flags = np.empty(AHEAD, np.int64)
    kids = np.empty((AHEAD, pits), np.int64)
    new_win = 0
    new_loss = 0
    queued = 0
    done = 0
    if lo >= hi:
        return new_win, new_loss, queued
    unrank(lo, stones, binom, board)
    for x in range(lo, hi):
        if get_code(own, x) == UNKNOWN:
            slot = queued & (AHEAD - 1)
            if queued - done == AHEAD:  # the slot's position leaves the queue first
                code = _decide_into(out, out_lo, ranks, kids, counts, flags, slot, other, deps)
                new_win += code == WIN
                new_loss += code == LOSS
                done += 1
            ranks[slot] = x
            counts[slot], flags[slot] = _queue_children(
                board, pits, win_kazan, k1, other, deps, dep_start, binom, other_empty, kids, slot
            )
            queued += 1
        if x + 1 < hi:
            successor(board)
    while done < queued:
        code = _decide_into(out, out_lo, ranks, kids, counts, flags, done & (AHEAD - 1), other, deps)
        new_win += code == WIN
        new_loss += code == LOSS
        done += 1
    return new_win, new_loss, queued


@njit(cache=True, nogil=True, inline="always")
def _every_queued_child_wins(kids, slot, count, other, deps):
    """The LOSS test of a frontier check: every queued child (see _queue_children) is a WIN.

    Its loop repeats _decide_queued's on purpose: with a shared inline helper for
    a child's code, pair 8-12's second sweep took 57.4 s against 44.2 s (one run
    each, in one session), and the loop is the hot one."""
    for i in range(count):
        kid = kids[slot, i]
        if kid & 1:
            code = get_code(deps, kid >> 1)
        else:
            code = get_code(other, kid >> 1)
        if code != WIN:
            return False
    return True


@njit(cache=True, nogil=True)
def frontier_range(
    pits, win_kazan, k1, stones, fresh, fresh_lo, lo, hi, own, found, other, deps, dep_start, binom
):
    """Re-evaluate the predecessors of positions decided in the previous round.

    fresh: codes of the paired layer (k2, k1) holding only its positions decided in
    the previous round, position fresh_lo + i at index i (fresh_lo a multiple of
    32: a chunk's own range, so a task holds a chunk, not a layer); those with rank
    in [lo, hi) are this call's sources. Their predecessors (by un-moves) lie in
    this layer (k1, k2), whose codes from earlier rounds are `own` (read only);
    `other` holds the paired layer's codes (where this layer's quiet moves lead)
    and deps its capture targets, as in sweep_range.
    found: this round's decisions for this layer, shared by every task of the
    round on a host (threads and processes) and updated atomically: a
    predecessor of a LOSS becomes WIN; a predecessor of a WIN is claimed CHECKED
    (3), once however many new WIN children it has on this host, evaluated
    again, and becomes LOSS when every child is a WIN. One read of `own` and one
    of `found` per predecessor say "decided before" and "seen this round".
    Returns (new wins, new losses, evaluated) as made by this call. Only positions
    with a changed child can change, so this decides exactly what a full sweep of
    the round would.

    The LOSS sources go first, then the WIN sources, each in a loop of its own:
    order does not matter inside a round (a re-check reads only earlier rounds'
    values, `other` and `deps`, and every change of `found` is a claim), and two
    small loops compile to faster code than one that does both (pair 8-12's
    round 2, 41M LOSS sources: 6.7 s against 11.8 s).
    """
    wins = _frontier_wins(pits, stones, fresh, fresh_lo, lo, hi, own, found, binom)
    losses, evaluated = _frontier_checks(
        pits, win_kazan, k1, stones, fresh, fresh_lo, lo, hi, own, found, other, deps, dep_start, binom
    )
    return wins, losses, evaluated


@njit(cache=True, nogil=True, inline="always")
def _next_source(fresh, base, lo, hi, want, w, j):
    """The next source with code `want` at or after bit j of word w of `fresh`
    (words counted from 0 of the layer), inside [lo, hi): (rank or -1, w, j) with
    (w, j) where the scan goes on."""
    end = (hi + 31) >> 5
    while w < end:
        word = fresh[w - base]
        if word != 0:
            while j < 32:
                code = (word >> np.uint64(2 * j)) & np.uint64(3)
                j += 1
                if code == want:
                    x = w * 32 + j - 1
                    if lo <= x < hi:
                        return x, w, j
        w += 1
        j = 0
    return -1, w, j


@njit(cache=True, nogil=True, inline="always")
def _reach(child, at, target, stones, binom):
    """Bring `child` (the board of rank `at`) to rank `target`, walking the odometer
    when it is close (a step costs a few ns, an unrank about 50)."""
    if at <= target and target - at <= WALK:
        while at < target:
            successor(child)
            at += 1
    else:
        unrank(target, stones, binom, child)
    return target


@njit(cache=True, nogil=True)
def _frontier_wins(pits, stones, fresh, fresh_lo, lo, hi, own, found, binom):
    """frontier_range's LOSS sources: their undecided predecessors become WINs.
    A predecessor's `own` and `found` words are prefetched when it is ranked and
    read PREDS predecessors later, so the reads overlap. Returns the new wins."""
    literally(pits)
    n = 2 * pits
    child = np.empty(n, np.int64)
    after = np.empty(n, np.int64)
    specs = np.empty((pits * (n + 1), 3), np.int64)
    ring = np.empty(PREDS, np.int64)
    queued = 0
    done = 0
    wins = 0
    base = fresh_lo >> 5
    at = -1 - WALK
    w, j = lo >> 5, 0
    while True:
        target, w, j = _next_source(fresh, base, lo, hi, LOSS, w, j)
        if target < 0:
            break
        at = _reach(child, at, target, stones, binom)
        for p in range(unmove_specs(child, pits, after, specs)):
            if queued - done == PREDS:
                wins += _claim_win(own, found, ring[done & (PREDS - 1)])
                done += 1
            x = unmove_rank(after, pits, specs[p, 0], specs[p, 1], specs[p, 2], binom)
            ring[queued & (PREDS - 1)] = x
            queued += 1
            prefetch(own, x >> 5)
            prefetch(found, x >> 5)
    while done < queued:
        wins += _claim_win(own, found, ring[done & (PREDS - 1)])
        done += 1
    return wins


@njit(cache=True, nogil=True, inline="always")
def _claim_win(own, found, x):
    """Predecessor x of a LOSS: 1 when it becomes a WIN here. A CHECKED mark
    (re-checked for another child) gives way to the WIN."""
    return 1 if get_code(own, x) == UNKNOWN and claim_code(found, x, WIN, True) else 0


@njit(cache=True, nogil=True, inline="always")
def _settle_check(found, kids, c, check_x, check_count, other, deps):
    """The last stage of a re-check queued in slot c: 1 when every child is a WIN
    and the position (CHECKED) becomes a LOSS here."""
    if check_count[c] >= 0 and _every_queued_child_wins(kids, c, check_count[c], other, deps):
        return 1 if claim_code(found, check_x[c], LOSS, True) else 0
    return 0


@njit(cache=True, nogil=True)
def _frontier_checks(
    pits, win_kazan, k1, stones, fresh, fresh_lo, lo, hi, own, found, other, deps, dep_start, binom
):
    """frontier_range's WIN sources: each undecided predecessor not yet seen this
    round is claimed CHECKED and re-checked; it becomes a LOSS when every child is
    a WIN. Only a LOSS can be new here: a LOSS child would have been decided last
    round at the latest, and then it is a LOSS source that makes this a WIN.

    Pipelined in three stages so that reads overlap: a source's predecessors are
    ranked and their `own` and `found` words prefetched; PREDS predecessors later
    those are read, the CHECKED claimed and the children ranked and prefetched;
    CHECKS re-checks later the children are read. One loop drives all three (the
    last iteration drains them), so the large inline evaluation appears once.
    Its set-up and source walk repeat _frontier_wins' on purpose: one loop for
    both kinds of source took 11.8-12.3 s on round 2 of pair 8-12 (41.3M LOSS
    sources) against 6.7-6.8 s for the two loops (code size, not prefetching).
    Returns (new losses, evaluated)."""
    literally(pits)
    n = 2 * pits
    child = np.empty(n, np.int64)
    after = np.empty(n, np.int64)
    specs = np.empty((pits * (n + 1), 3), np.int64)
    ring = PREDS + pits * (n + 1)  # room for PREDS waiting plus one source's predecessors
    pred_x = np.empty(ring, np.int64)
    pred_board = np.empty((ring, n), np.int64)
    check_x = np.empty(CHECKS, np.int64)
    check_count = np.empty(CHECKS, np.int64)
    kids = np.empty((CHECKS, pits), np.int64)
    losses = 0
    evaluated = 0
    first = 0  # ring entries [first, first + waiting) wait for stage B
    waiting = 0
    checks_in = 0
    checks_out = 0
    base = fresh_lo >> 5
    at = -1 - WALK
    w, j = lo >> 5, 0
    while True:
        target, w, j = _next_source(fresh, base, lo, hi, WIN, w, j)
        if target >= 0:
            at = _reach(child, at, target, stones, binom)
            for p in range(unmove_specs(child, pits, after, specs)):
                x = unmove_rank(after, pits, specs[p, 0], specs[p, 1], specs[p, 2], binom)
                slot = (first + waiting) % ring
                waiting += 1
                pred_x[slot] = x
                unmove_board(after, pits, specs[p, 0], specs[p, 1], specs[p, 2], pred_board[slot])
                prefetch(own, x >> 5)
                prefetch(found, x >> 5)
        keep = PREDS if target >= 0 else 0
        while waiting > keep:
            slot = first
            first = (first + 1) % ring
            waiting -= 1
            x = pred_x[slot]
            if get_code(own, x) != UNKNOWN or get_code(found, x) != UNKNOWN:
                continue
            if not claim_code(found, x, CHECKED, False):
                continue  # another task on this host got there first
            evaluated += 1
            if checks_in - checks_out == CHECKS:
                losses += _settle_check(
                    found, kids, checks_out & (CHECKS - 1), check_x, check_count, other, deps
                )
                checks_out += 1
            c = checks_in & (CHECKS - 1)
            checks_in += 1
            count, flag = _queue_children(
                pred_board[slot], pits, win_kazan, k1, other, deps, dep_start, binom, False, kids, c
            )
            check_x[c] = x
            # flag 1 (a move wins at once) cannot occur here: the position would be a
            # WIN since round 0. A count of -1 keeps it from reading as all WINs.
            check_count[c] = count if flag == 0 else -1
        if target < 0:
            break
    while checks_out < checks_in:
        losses += _settle_check(found, kids, checks_out & (CHECKS - 1), check_x, check_count, other, deps)
        checks_out += 1
    return losses, evaluated


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
