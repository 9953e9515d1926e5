"""Numba loops over rank ranges of one pair: the sweeps and frontier rounds that
evaluate positions (SPEC.md min-max) into 2-bit code arrays (code_arrays.py).

Kernels take arrays and integers only; they never see a URL, a dict or a Dask object.
"""

from __future__ import annotations

from typing import Any

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
from .code_arrays import CHECKED, LOSS, UNKNOWN, WIN, get_code, set_code
from .prefetch import prefetch

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


# (kernel, numba signature) -> its compiled entry point
_SPECIALIZED: dict[tuple[Any, tuple[Any, ...]], Any] = {}


def call_specialized(kernel: Any, args: tuple[Any, ...], pits_at: int = 0) -> Any:
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
