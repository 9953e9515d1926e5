"""Numba loops of the verifier: each position against its children's stored values.

Independent of the solver's propagation code (kernels.evaluate, sweep_range,
frontier_range, pair.py): only the rules and the rank (rules.py, which the
brute-force tests cover) and the 2-bit code layout (kernels.get_code) are shared.

A position's expected value and distance follow from its children's stored ones
(SPEC.md, "What the solve computes"; a child is seen from its own mover, so a
LOSS child is good for us):

- a move that wins at once is a child LOSS at distance 0 (a winning exit);
- a capture that does not end the game leads into a dependency layer: a child at
  distance 0 with that layer's stored value (an exit);
- a quiet move leads into the paired layer, whose stored distance is used;
- WIN  if some child is a LOSS: distance 1 + the smallest such child's distance;
- LOSS if every child is a WIN: distance 1 + the largest child's distance (0 with
  no move at all);
- DRAW otherwise, distance 0 (draws store 0).

Checking stored == expected at every position is, for win/draw/loss alone, local
consistency (a cycle of positions wrongly marked WIN/LOSS can satisfy it). With
the distances it is a proof: the distance of a WIN or LOSS strictly decreases
along the moves that justify it and ends at an exit or at a position with no
move, so by induction every WIN and LOSS is right, and then every DRAW (no move
to a LOSS, one to a DRAW) is one too, given that the dependency layers are right
(they are checked the same way, and captures only go to larger k1 + k2).
"""

from __future__ import annotations

import numpy as np
from numba import literally, njit

from ..game.rules import MOVE_EMPTY, MOVE_WIN, move_rank, successor, unrank
from ..solve.code_arrays import LOSS, WIN, get_code
from ..solve.prefetch import prefetch

DRAW = 0
# moves_of marks a move that wins at once with this capture count.
WINS_AT_ONCE = -1
# check_range records these for each fault it keeps (columns of `faults`).
FAULT_COLUMNS = ("stored_value", "expected_value", "stored_dtz", "expected_dtz")
_FAR = 1 << 62


@njit(cache=True, nogil=True, inline="always")
def moves_of(board, pits, win_kazan, k1, binom, captured, child):
    """The legal moves of `board` (layer (k1, k2)); returns how many. For move i,
    captured[i] is WINS_AT_ONCE for a move that ends the game with a win, else the
    stones captured (0: a quiet move into layer (k2, k1); c > 0: into (k2, k1 + c)),
    and child[i] the child's rank in that layer.

    By rules.move_rank, the arithmetic of a move (the tests hold it equal to the
    plain sowing of sow_and_capture and the rank of the rotated board, on every
    position of small variants and random ones of 50 stones): a check of pair
    4-6 took 324 ns a position so, 371 with the plain sowing (566 and 658 with
    distances)."""
    opponent = 0
    for j in range(pits, 2 * pits):
        opponent += board[j]
    count = 0
    for pit in range(pits):
        outcome, taken, rank = move_rank(board, opponent, pit, pits, k1, win_kazan, binom)
        if outcome == MOVE_EMPTY:
            continue
        if outcome == MOVE_WIN:
            captured[count] = WINS_AT_ONCE
            child[count] = 0
        else:
            captured[count] = taken
            child[count] = rank
        count += 1
    return count


@njit(cache=True, nogil=True, inline="always")
def expected(count, child_value, child_dtz):
    """(value, distance) a position must have, given its `count` children's stored
    values and distances (an exit has distance 0; see the module docstring)."""
    win_dtz = _FAR
    loss_dtz = 0
    draw = False
    for i in range(count):
        value = child_value[i]
        if value == LOSS:
            if child_dtz[i] + 1 < win_dtz:
                win_dtz = child_dtz[i] + 1
        elif value == WIN:
            if child_dtz[i] + 1 > loss_dtz:
                loss_dtz = child_dtz[i] + 1
        else:
            draw = True
    if win_dtz != _FAR:
        return WIN, win_dtz
    if draw:
        return DRAW, 0
    return LOSS, loss_dtz


# The checks generate the moves of BLOCK positions, asking for each child's
# stored words as they go (prefetch), then read them: one read at a time, the
# core waited on nearly every one in a layer of GBs (pair 4-6: 571 ns a position
# without distances, 1,090 with them, against 268 and 310 in pair 12-14).
BLOCK = 32


@njit(cache=True, nogil=True, inline="always")
def _moves_ahead(
    board,
    pits,
    win_kazan,
    k1,
    binom,
    captured,
    child,
    counts,
    block,
    left,
    other,
    other_dtz,
    deps,
    dep_start,
    use_dtz,
    with_deps,
):
    """The moves of the next `block` positions from `board` on into rows 0..block-1
    of captured, child and counts (moves_of's), each child's stored words asked
    for (a capture's only `with_deps`); `board` ends on the position after them
    (if `left` goes past them)."""
    for j in range(block):
        count = moves_of(board, pits, win_kazan, k1, binom, captured[j], child[j])
        counts[j] = count
        for i in range(count):
            c = captured[j, i]
            if c == 0:
                prefetch(other, child[j, i] >> 5)
                if use_dtz:
                    prefetch(other_dtz, child[j, i])
            elif c > 0 and with_deps:
                prefetch(deps, (dep_start[c // 2 - 1] + child[j, i]) >> 5)
        if j + 1 < left:
            successor(board)


@njit(cache=True, nogil=True, inline="always")
def _record(fault_rank, faults, recorded, x, value, want, dtz, want_dtz):
    """Keep a fault (FAULT_COLUMNS) where there is room; returns how many are kept."""
    if recorded == fault_rank.shape[0]:
        return recorded
    fault_rank[recorded] = x
    faults[recorded, 0] = value
    faults[recorded, 1] = want
    faults[recorded, 2] = dtz
    faults[recorded, 3] = want_dtz
    return recorded + 1


@njit(cache=True, nogil=True)
def check_range(
    pits,
    win_kazan,
    k1,
    stones,
    lo,
    hi,
    own,
    own_dtz,
    own_dtz_lo,
    other,
    other_dtz,
    deps,
    dep_start,
    binom,
    use_dtz,
    exits,
    fault_rank,
    faults,
):
    """Check every position of layer (k1, k2) with rank in [lo, hi).

    own/other:  2-bit codes of this layer and of the paired layer (k2, k1);
    own_dtz/other_dtz: their distance tables (ignored unless use_dtz); position x
                of this layer at own_dtz[x - own_dtz_lo] (a chunk's slice, or the
                whole table at 0);
    exits:      given (not empty), bit x - lo is set where a move wins at once or
                a capture reaches a LOSS (check_distances_range's input);
    deps:       the capture targets' codes end to end; layer (k2, k1 + c) starts
                at position dep_start[c // 2 - 1];
    fault_rank/faults: the first faults found (rank; FAULT_COLUMNS), at most
                fault_rank.shape[0] of them.
    Returns (wins, draws, losses, value faults, distance faults, largest stored
    distance, faults recorded). A distance fault is counted only where the value
    is right.
    """
    literally(pits)  # one compiled version per board size: the pit loops unroll
    n = 2 * pits
    board = np.empty(n, np.int64)
    captured = np.empty((BLOCK, pits), np.int64)
    child = np.empty((BLOCK, pits), np.int64)
    counts = np.empty(BLOCK, np.int64)
    child_value = np.empty(pits, np.int64)
    child_dtz = np.empty(pits, np.int64)
    wins = 0
    draws = 0
    losses = 0
    value_faults = 0
    dtz_faults = 0
    max_dtz = 0
    recorded = 0
    if lo >= hi:
        return wins, draws, losses, value_faults, dtz_faults, max_dtz, recorded
    unrank(lo, stones, binom, board)
    for x in range(lo, hi):
        j = (x - lo) % BLOCK
        if j == 0:
            _moves_ahead(
                board,
                pits,
                win_kazan,
                k1,
                binom,
                captured,
                child,
                counts,
                min(BLOCK, hi - x),
                hi - x,
                other,
                other_dtz,
                deps,
                dep_start,
                use_dtz,
                True,
            )
        count = counts[j]
        any_loss = False
        for i in range(count):
            c = captured[j, i]
            child_dtz[i] = 0
            if c == WINS_AT_ONCE:
                child_value[i] = LOSS
            elif c == 0:
                child_value[i] = get_code(other, child[j, i])
            else:
                child_value[i] = get_code(deps, dep_start[c // 2 - 1] + child[j, i])
            if child_value[i] == LOSS:
                any_loss = True
        if use_dtz:
            # Only the distances that decide the expected one are read (a random
            # access each): a WIN's LOSS children, or all children of a LOSS. The
            # others stay 0, which `expected` then ignores.
            for i in range(count):
                if captured[j, i] == 0 and (
                    child_value[i] == LOSS or (not any_loss and child_value[i] == WIN)
                ):
                    child_dtz[i] = other_dtz[child[j, i]]
        want, want_dtz = expected(count, child_value, child_dtz)
        if exits.shape[0] > 0:
            for i in range(count):
                if captured[j, i] != 0 and child_value[i] == LOSS:
                    exits[(x - lo) >> 3] |= np.uint8(1 << ((x - lo) & 7))
                    break
        value = np.int64(get_code(own, x))
        dtz = np.int64(own_dtz[x - own_dtz_lo]) if use_dtz else np.int64(0)
        if value == WIN:
            wins += 1
        elif value == LOSS:
            losses += 1
        else:
            draws += 1
        if dtz > max_dtz:
            max_dtz = dtz
        fault = False
        if value != want:
            value_faults += 1
            fault = True
        elif use_dtz and dtz != want_dtz:
            dtz_faults += 1
            fault = True
        if fault:
            recorded = _record(fault_rank, faults, recorded, x, value, want, dtz, want_dtz)
    return wins, draws, losses, value_faults, dtz_faults, max_dtz, recorded


@njit(cache=True, nogil=True)
def check_distances_range(
    pits,
    win_kazan,
    k1,
    stones,
    lo,
    hi,
    own,
    own_dtz,
    own_dtz_lo,
    other,
    other_dtz,
    binom,
    exits,
    skip,
    fault_rank,
    faults,
):
    """The distances of positions [lo, hi) of layer (k1, k2), in a pass of their
    own after check_range has checked the values without them (so the capture
    targets and the paired layer's distances are never held at once): `exits`
    (bit x - lo) is what that pass found of the captures, `skip` (sorted) the
    ranks whose value it found wrong. A WIN with an exit is 1 ply from the end of
    the layer; else 1 + the least distance of a quiet move's LOSS child. A LOSS
    is 1 + the largest distance of a quiet move's child, at least 1 with a
    capture (its target is a WIN, at distance 0), 0 with no move; a DRAW 0.
    Returns (distance faults, largest stored distance, faults recorded); the
    expected value recorded with a fault is the stored one."""
    literally(pits)
    n = 2 * pits
    board = np.empty(n, np.int64)
    captured = np.empty(pits, np.int64)
    child = np.empty(pits, np.int64)
    captured = np.empty((BLOCK, pits), np.int64)
    child = np.empty((BLOCK, pits), np.int64)
    counts = np.empty(BLOCK, np.int64)
    dtz_faults = 0
    max_dtz = 0
    recorded = 0
    at = 0
    if lo >= hi:
        return dtz_faults, max_dtz, recorded
    unrank(lo, stones, binom, board)
    for x in range(lo, hi):
        j = (x - lo) % BLOCK
        if j == 0:
            _moves_ahead(
                board,
                pits,
                win_kazan,
                k1,
                binom,
                captured,
                child,
                counts,
                min(BLOCK, hi - x),
                hi - x,
                other,
                other_dtz,
                other,
                binom,
                True,
                False,
            )
        count = counts[j]
        value = np.int64(get_code(own, x))
        dtz = np.int64(own_dtz[x - own_dtz_lo])
        if dtz > max_dtz:
            max_dtz = dtz
        while at < skip.shape[0] and skip[at] < x:
            at += 1
        if at < skip.shape[0] and skip[at] == x:
            want = dtz  # its value is wrong: counted by the values pass
        elif value == WIN:
            if (exits[(x - lo) >> 3] >> ((x - lo) & 7)) & 1:
                want = 1
            else:
                want = _FAR
                for i in range(count):
                    if (
                        captured[j, i] == 0
                        and get_code(other, child[j, i]) == LOSS
                        and other_dtz[child[j, i]] + 1 < want
                    ):
                        want = other_dtz[child[j, i]] + 1
                if want == _FAR:
                    want = dtz  # no LOSS child: a wrong value, counted there
        elif value == LOSS:
            want = 0
            for i in range(count):
                if captured[j, i] == 0:
                    if other_dtz[child[j, i]] + 1 > want:
                        want = other_dtz[child[j, i]] + 1
                elif want < 1:
                    want = 1
        else:
            want = 0
        if dtz != want:
            dtz_faults += 1
            recorded = _record(fault_rank, faults, recorded, x, value, value, dtz, want)
    return dtz_faults, max_dtz, recorded


@njit(cache=True, nogil=True)
def list_moves(board, pits, win_kazan, k1, binom, captured, child):
    """moves_of for callers outside numba (sampled positions)."""
    return moves_of(board, pits, win_kazan, k1, binom, captured, child)


@njit(cache=True, nogil=True)
def expected_of(count, child_value, child_dtz):
    """expected for callers outside numba."""
    return expected(count, child_value, child_dtz)
