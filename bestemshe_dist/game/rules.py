"""The rules and the rank (SPEC.md), as numba functions on small integer arrays.

No I/O, no Dask: these are the building blocks of the kernels, and the brute-force
tests check them against an independent implementation.

A board is an int64 array of n = 2 * pits counts, written from the side to move
(own pits 0..pits-1, then the opponent's). Ranks follow SPEC.md:

    rank = sum over i = 0..n-2 of C(i + p_i, i + 1),  p_i = pits[0] + ... + pits[i]

so `binom` is Variant.binom (binom[x, k] = C(x, k)).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from .variant import MAX_STONES

if TYPE_CHECKING:
    from .variant import Variant

# Outcomes of sow_and_capture, beside the capture count.
MOVE_EMPTY = -1  # the chosen pit holds no stone: not a legal move
MOVE_WIN = 1  # the mover wins at once (opponent row empty, or kazan >= win_kazan)
MOVE_ON = 0  # the game goes on: the opponent is to move in the child


@njit(cache=True, nogil=True)
def rank(board: NDArray[np.int64], binom: NDArray[np.int64]) -> int:
    prefix = 0
    value = 0
    for i in range(board.shape[0] - 1):
        prefix += board[i]
        value += binom[i + prefix, i + 1]
    return value


@njit(cache=True, nogil=True)
def rank_rows(boards: NDArray[np.int64], binom: NDArray[np.int64], out: NDArray[np.int64]) -> None:
    """rank() of every row of `boards` (N, n) into out[:N]: one call for a batch."""
    for r in range(boards.shape[0]):
        out[r] = rank(boards[r], binom)


@njit(cache=True, nogil=True)
def unrank(value: int, stones: int, binom: NDArray[np.int64], board: NDArray[np.int64]) -> None:
    """Fill `board` (length n) with the position of rank `value` among `stones` stones."""
    n = board.shape[0]
    # Colex decoding: the prefix sums plus their index form a strictly increasing
    # (n-1)-subset of [0, stones + n - 2]; peel off its largest element first.
    upper = stones + n - 2
    above = stones  # p_{n-1} = all stones
    for i in range(n - 2, -1, -1):
        k = i + 1
        c = upper
        while binom[c, k] > value:
            c -= 1
        value -= binom[c, k]
        prefix = c - i
        board[i + 1] = above - prefix
        above = prefix
        upper = c - 1
    board[0] = above


# successor, rotate and unmove_specs are inlined where they are called: the
# kernels are compiled for a constant board size (kernels.call_specialized), so
# the loops over the pits unroll there. On one core, the un-move arithmetic of a
# walk over pair 2-4 (no update) fell from 67.5 to 54.6 ns (best of 7 on a
# noisy machine), a whole un-move over pair 8-12 from 57-60 to 53-56 ns.
@njit(cache=True, nogil=True, inline="always")
def successor(board: NDArray[np.int64]) -> bool:
    """Advance `board` to the position of the next rank (an odometer over stones).

    Returns False (board unchanged) at the last rank. Derivation: the colex successor
    raises the smallest prefix sum p_j that can grow (pits[j + 1] > 0) and resets the
    lower prefix sums to 0, i.e. everything in pits 0..j plus one stone from pit j+1
    gathers in pit j.
    """
    n = board.shape[0]
    gathered = 0
    for j in range(n - 1):
        gathered += board[j]
        if board[j + 1] > 0:
            for t in range(j):
                board[t] = 0
            board[j] = gathered + 1
            board[j + 1] -= 1
            return True
    return False


@njit(cache=True, nogil=True)
def sow_and_capture(
    board: NDArray[np.int64], pit: int, pits: int, k1: int, win_kazan: int, after: NDArray[np.int64]
) -> tuple[int, int]:
    """Play own `pit` on `board`; `after` gets the board (mover's view, not rotated).

    Returns (outcome, captured). Sowing follows SPEC.md: s == 1 moves the stone to the
    next pit; s > 1 puts one stone back and the other s - 1 one each into the
    following pits, wrapping (so pit i itself gets one more per full lap).
    """
    n = 2 * pits
    s = board[pit]
    if s == 0:
        return MOVE_EMPTY, 0
    for j in range(n):
        after[j] = board[j]
    if s == 1:
        after[pit] = 0
        last = pit + 1  # pit < pits, so no wrap
        after[last] += 1
    else:
        laps = (s - 1) // n
        rest = (s - 1) - laps * n
        after[pit] = 1
        if laps:
            for j in range(n):
                after[j] += laps
        for t in range(1, rest + 1):
            j = pit + t
            if j >= n:
                j -= n
            after[j] += 1
        last = (pit + s - 1) % n
    captured = 0
    if last >= pits and after[last] % 2 == 0:
        captured = after[last]
        after[last] = 0
    if k1 + captured >= win_kazan:
        return MOVE_WIN, captured
    for j in range(pits, n):
        if after[j]:
            return MOVE_ON, captured
    return MOVE_WIN, captured


def _sowing_table() -> NDArray[np.int32]:
    """SOWING[pits, pit, s] = (laps, rest, keep, last, sown) of sowing s stones
    from own `pit` (see landing): everything about a move but the board's counts."""
    table = np.zeros((6, 5, MAX_STONES + 1, 5), np.int32)
    for pits in range(1, 6):
        n = 2 * pits
        for pit in range(pits):
            for s in range(1, MAX_STONES + 1):
                laps, rest, keep = (0, 1, 0) if s == 1 else ((s - 1) // n, (s - 1) % n, 1)
                top = min(pit + rest, n - 1)
                sown = laps * pits + (top - pits + 1 if top >= pits else 0)
                table[pits, pit, s] = (laps, rest, keep, (pit + rest) % n, sown)
    return table


# A constant of the compiled kernels. A table lookup in place of the divisions and
# branches of sowing: round 0's five landings a position of pair 12-14 took 76 ns
# computed, 13 ns looked up (the branches on the stone count mispredict).
SOWING = _sowing_table()


@njit(cache=True, nogil=True, inline="always")
def landing(
    board: NDArray[np.int64], opponent: int, pit: int, pits: int, k1: int, win_kazan: int
) -> tuple[int, int, int, int, int, int]:
    """Where own `pit`'s last stone lands, without building the board after the move:
    (outcome, captured, laps, rest, keep, last). `opponent` is the stone count of
    board[pits:]; the other values feed child_rank.

    The kernels look at every move of millions of positions, so sowing (SPEC.md) is
    done arithmetically: s - 1 stones go round from the next pit, `laps` to every
    pit and one more to the `rest` pits after the origin, which keeps `keep` = 1
    stone plus its laps; a single stone just moves on (keep 0, rest 1). `sown` is
    what the opponent's row gets: `laps` a pit plus the extra stones of pits
    pit+1 .. pit+rest (before wrapping) that lie in [pits, n).
    """
    s = board[pit]
    row = SOWING[pits, pit, s]
    laps = np.int64(row[0])
    last = np.int64(row[3])
    landed = board[last] + laps + 1
    # The last pit got laps + 1 when it is the opponent's (rest >= 1 then).
    captured = landed if (last >= pits) & ((landed & 1) == 0) else 0
    won = (k1 + captured >= win_kazan) | (opponent + np.int64(row[4]) - captured == 0)
    outcome = MOVE_EMPTY if s == 0 else (MOVE_WIN if won else MOVE_ON)
    return outcome, captured, laps, np.int64(row[1]), np.int64(row[2]), last


@njit(cache=True, nogil=True, inline="always")
def child_rank(
    board: NDArray[np.int64],
    pit: int,
    pits: int,
    binom: NDArray[np.int64],
    captured: int,
    laps: int,
    rest: int,
    keep: int,
    last: int,
) -> int:
    """rotated_rank of the board after a MOVE_ON found by landing(), each child pit's
    count formed inside the rank's prefix sum."""
    n = 2 * pits
    value = 0
    prefix = 0
    for c in range(n - 1):
        j = c + pits if c < pits else c - pits  # the board pit seen as child pit c
        if j == pit:
            x = keep + laps
        elif j == last and captured > 0:
            x = 0
        else:
            x = board[j] + laps
            d = j - pit - 1
            if d < 0:
                d += n
            if d < rest:
                x += 1
        prefix += x
        value += binom[c + prefix, c + 1]
    return value


@njit(cache=True, nogil=True, inline="always")
def move_rank(
    board: NDArray[np.int64],
    opponent: int,
    pit: int,
    pits: int,
    k1: int,
    win_kazan: int,
    binom: NDArray[np.int64],
) -> tuple[int, int, int]:
    """(outcome, captured, child rank) of own `pit` (rank 0 unless MOVE_ON): what
    sow_and_capture and rotated_rank give, by landing() and child_rank()."""
    outcome, captured, laps, rest, keep, last = landing(board, opponent, pit, pits, k1, win_kazan)
    if outcome != MOVE_ON:
        return outcome, captured, 0
    return outcome, captured, child_rank(board, pit, pits, binom, captured, laps, rest, keep, last)


@njit(cache=True, nogil=True)
def rotated_rank(after: NDArray[np.int64], pits: int, binom: NDArray[np.int64]) -> int:
    """Rank of the child board: `after` seen from the opponent (rotated by `pits`)."""
    n = 2 * pits
    prefix = 0
    value = 0
    for i in range(n - 1):
        j = i + pits
        if j >= n:
            j -= n
        prefix += after[j]
        value += binom[i + prefix, i + 1]
    return value


@njit(cache=True, nogil=True, inline="always")
def rotate(after: NDArray[np.int64], pits: int, child: NDArray[np.int64]) -> None:
    n = 2 * pits
    for i in range(n):
        j = i + pits
        if j >= n:
            j -= n
        child[i] = after[j]


def play(
    variant: Variant, k1: int, k2: int, board: ArrayLike, pit: int
) -> tuple[str, int] | tuple[str, tuple[int, int, NDArray[np.int64]], int] | None:
    """Python-level move for callers outside the hot loops (oracle, tests).

    Returns None for an empty pit, ("win", captured) when the mover wins at once, or
    ("child", (k1', k2', child_board), captured) with the child from the opponent's side.
    """
    board = np.asarray(board, dtype=np.int64)
    after = np.empty_like(board)
    outcome, captured = sow_and_capture(board, pit, variant.pits, k1, variant.win_kazan, after)
    if outcome == MOVE_EMPTY:
        return None
    if outcome == MOVE_WIN:
        return ("win", int(captured))
    child = np.empty_like(board)
    rotate(after, variant.pits, child)
    return ("child", (k2, k1 + int(captured), child), int(captured))


@njit(cache=True, nogil=True)
def unmoves(child: NDArray[np.int64], pits: int, preds: NDArray[np.int64]) -> int:
    """Boards from which one non-capturing move gives `child` (see unmoves_into)."""
    n = 2 * pits
    return unmoves_into(child, pits, preds, np.empty(n, np.int64), np.empty((pits * (n + 1), 3), np.int64))


@njit(cache=True, nogil=True)
def unmoves_into(
    child: NDArray[np.int64],
    pits: int,
    preds: NDArray[np.int64],
    after: NDArray[np.int64],
    specs: NDArray[np.int64],
) -> int:
    """Fill rows of `preds` (shape (>= max_unmoves(pits), n)) with the boards from
    which one non-capturing move gives `child` (see unmove_specs); returns how many.
    `after` (n entries) and `specs` (max_unmoves(pits) x 3) are scratch."""
    count = unmove_specs(child, pits, after, specs)
    for p in range(count):
        unmove_board(after, pits, specs[p, 0], specs[p, 1], specs[p, 2], preds[p])
    return count


@njit(cache=True, nogil=True, inline="always")
def unmove_specs(
    child: NDArray[np.int64], pits: int, after: NDArray[np.int64], specs: NDArray[np.int64]
) -> int:
    """The non-capturing moves that give `child` (written from the side to move in
    the child, i.e. the opponent of the predecessor's mover), as rows
    (pit, laps, rest) of `specs`; returns how many. `after` receives the board after
    the move (the child rotated back), which unmove_board and unmove_rank start from.

    Inverts sow_and_capture: for own pit i the move was either a single stone (pit i
    now empty, pit i + 1 got it: laps = -1, rest = 1) or s = 1 + laps * n + rest
    stones with laps = after[i] - 1 (pit i keeps one stone plus one per lap, every
    other pit got `laps`, the `rest` pits after i one more). The move must not
    capture (its last stone ends on the mover's side or leaves an odd count) and
    must not end the game (the child's own row, the predecessor's opponent row, is
    not empty).
    """
    n = 2 * pits
    own_row = 0
    for j in range(pits):
        own_row += child[j]
    if own_row == 0:
        return 0
    rotate(child, pits, after)  # rotating by `pits` twice is the identity
    # Every pit but the origin got at least `laps` stones: the smallest and the
    # second smallest count give min over j != i for every i in one pass.
    low1 = after[0]
    low2 = after[1]
    where = 0
    if low2 < low1:
        low1, low2 = low2, low1
        where = 1
    for j in range(2, n):
        v = after[j]
        if v < low1:
            low2 = low1
            low1 = v
            where = j
        elif v < low2:
            low2 = v
    count = 0
    for i in range(pits):
        # A single stone moved from pit i to pit i + 1.
        if after[i] == 0 and after[i + 1] >= 1:
            last = i + 1
            if last < pits or after[last] % 2 == 1:
                specs[count, 0] = i
                specs[count, 1] = -1
                specs[count, 2] = 1
                count += 1
        # s >= 2 stones: `rest` runs from 0 up to just before the first pit after i
        # holding no more than laps.
        laps = after[i] - 1
        if laps < 0:
            continue
        lowest = low2 if where == i else low1
        if lowest < laps:
            continue
        top = 0
        j = i + 1
        while top < n - 1:
            if j >= n:
                j -= n
            if after[j] <= laps:
                break
            top += 1
            j += 1
        for rest in range(0 if laps > 0 else 1, top + 1):
            last = i + rest
            if last >= n:
                last -= n
            if last >= pits and after[last] % 2 == 0:
                continue  # that move would have captured
            specs[count, 0] = i
            specs[count, 1] = laps
            specs[count, 2] = rest
            count += 1
    return count


@njit(cache=True, nogil=True, inline="always")
def _unmoved_count(after: NDArray[np.int64], pits: int, pit: int, laps: int, rest: int, j: int) -> int:
    """Stones in pit j before the un-move (pit, laps, rest) of unmove_specs."""
    n = 2 * pits
    if laps < 0:  # a single stone from pit to pit + 1
        if j == pit:
            return 1
        return after[j] - 1 if j == pit + 1 else after[j]
    if j == pit:
        return 1 + laps * n + rest
    d = j - pit - 1
    if d < 0:
        d += n
    return after[j] - laps - (1 if d < rest else 0)


@njit(cache=True, nogil=True)
def unmove_board(
    after: NDArray[np.int64], pits: int, pit: int, laps: int, rest: int, row: NDArray[np.int64]
) -> None:
    """The predecessor board of one un-move found by unmove_specs."""
    for j in range(2 * pits):
        row[j] = _unmoved_count(after, pits, pit, laps, rest, j)


@njit(cache=True, nogil=True, inline="always")
def unmove_rank(
    after: NDArray[np.int64], pits: int, pit: int, laps: int, rest: int, binom: NDArray[np.int64]
) -> int:
    """rank() of unmove_board(...), each pit's count formed inside the prefix sum
    (the frontier kernel needs the board only for predecessors it re-checks).
    Written with selects, not branches (_unmoved_count's branches mispredict):
    a single stone is laps 0, rest 1 with s = 1 in the origin."""
    n = 2 * pits
    single = laps < 0
    s = 1 if single else 1 + laps * n + rest
    every = 0 if single else laps
    prefix = 0
    value = 0
    for j in range(n - 1):
        d = j - pit - 1
        d = d + n if d < 0 else d
        count = after[j] - every - (1 if d < rest else 0)
        prefix += s if j == pit else count
        value += binom[j + prefix, j + 1]
    return value


def max_unmoves(pits: int) -> int:
    return pits * (2 * pits + 1)
