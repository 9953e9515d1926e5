"""Counting retrograde: each position's moves generated once forward, once backward.

Every undecided position of a pair keeps how many of its moves into the paired
layer are not yet known to reach a WIN. A round walks the un-moves of the
positions its partner layer decided in the round before, once: a predecessor of
a LOSS is a WIN; a predecessor of a WIN loses one from its count, and a count
that reaches zero is a LOSS. No position is evaluated again after the first
pass (round 0), and a position is still decided in the round that makes it
d + 1 plies from the next capture (pair.py), so the distances are those of the
sweep and frontier methods, bit for bit.

A position's state is 3 bits, 21 to a uint64 word (63 bits used):

    NOLOSE = 0   undecided, and some capture reaches a drawn dependency position:
                 it can still become a WIN, never a LOSS (no count needed)
    WIN    = 1   decided (the values of code_arrays.py)
    LOSS   = 2
    2 + c        undecided, c in 1..5 moves into the paired layer still unknown

A move whose child is a LOSS is never a WIN, so its count never reaches zero:
a position with such a child becomes a WIN from that child, never a LOSS. A
draw child is a move that never becomes known. A count falls from 3 to 2, which
is LOSS: the decrement itself decides. Five moves at most (pits <= 5) fill the
eight states exactly.

Memory: 3 bits a position of each layer, against the 2 of the frontier's codes,
plus the same round array (2 bits a position of one layer) for a round's
decisions; the dependency layers stay 2-bit codes (code_arrays.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

import numpy as np
import numpy.typing as npt
from numba import literally, njit

from ..game.geometry import partner
from ..game.rules import (
    MOVE_EMPTY,
    MOVE_ON,
    MOVE_WIN,
    child_rank,
    landing,
    successor,
    unmove_rank,
    unmove_specs,
    unrank,
)
from ..game.variant import Variant
from . import code_arrays, kernels
from .atomics import atomic_or, compare_and_swap
from .bits import decided_bits, trailing_zeros
from .code_arrays import LOSS, UNKNOWN, WIN, Codes, get_code, set_code
from .pair import COUNTING, Bundle, Delta, Layer, PairResult, RoundState
from .prefetch import prefetch

PER_WORD = 21
BITS = 3
NOLOSE = 0
COUNTED = 2  # state 2 + c: c moves still unknown
_MASK = np.uint64(7)

States = npt.NDArray[np.uint64]
_NONE = np.zeros(0, np.int64)
_NO_VALUES = np.zeros(0, np.uint8)


@njit(cache=True, nogil=True)
def state_words(npos):
    """uint64 words holding npos 3-bit states (never 0)."""
    return max(1, (npos + PER_WORD - 1) // PER_WORD)


def new_states(npos: int) -> States:
    return np.zeros(state_words(npos), dtype=np.uint64)


def state_bytes(positions: int) -> int:
    """A layer's states in whole words: 3 bits a position, 21 a word."""
    return 8 * max(1, (positions + PER_WORD - 1) // PER_WORD)


@njit(cache=True, nogil=True, inline="always")
def get_state(states, x):
    w = x // PER_WORD
    return (states[w] >> np.uint64(BITS * (x - PER_WORD * w))) & _MASK


@njit(cache=True, nogil=True, inline="always")
def put_state(states, x, s):
    """Set x's state where no other task writes its word."""
    w = x // PER_WORD
    shift = np.uint64(BITS * (x - PER_WORD * w))
    states[w] = (states[w] & ~(_MASK << shift)) | (np.uint64(s) << shift)


@njit(cache=True, nogil=True, inline="always")
def put_state_shared(states, x, s):
    """Set x's state indivisibly (a word at a range's edge is shared by two tasks)."""
    w = x // PER_WORD
    shift = np.uint64(BITS * (x - PER_WORD * w))
    while True:
        old = states[w]
        if compare_and_swap(states, w, old, (old & ~(_MASK << shift)) | (np.uint64(s) << shift)) == old:
            return


@njit(cache=True, nogil=True, inline="always")
def _undecided(s):
    return s == NOLOSE or s > COUNTED


# -- states from the moves: round 0, and a pair brought back from its checkpoints -------
@njit(cache=True, nogil=True, inline="always")
def _queue_moves(board, pits, win_kazan, k1, partner_states, deps, dep_start, binom, kids, slot):
    """A position's moves: captures as dependency indices (2 i + 1) and quiet
    moves as paired-layer indices (2 i), into kids[slot], prefetched. Returns
    (kids queued, won at once)."""
    opponent = kernels.opponent_stones(board, pits)
    count = 0
    for pit in range(pits):
        outcome, captured, laps, rest, keep, last = landing(board, opponent, pit, pits, k1, win_kazan)
        if outcome == MOVE_EMPTY:
            continue
        if outcome == MOVE_WIN:
            return 0, True
        if captured == 0:
            child = child_rank(board, pit, pits, binom, captured, laps, rest, keep, last)
            kids[slot, count] = child << 1
            prefetch(partner_states, child // PER_WORD)
        else:
            child = dep_start[captured // 2 - 1] + child_rank(
                board, pit, pits, binom, captured, laps, rest, keep, last
            )
            kids[slot, count] = (child << 1) | 1
            prefetch(deps, child >> 5)
        count += 1
    return count, False


@njit(cache=True, nogil=True, inline="always")
def _state_of_queued(kids, slot, count, won, partner_states, deps):
    """The queued position's state: WIN when a move wins at once or reaches a lost
    dependency position; else NOLOSE when a capture reaches a drawn one; else its
    count of moves not yet known to reach a WIN (0: a LOSS)."""
    if won:
        return WIN
    nolose = False
    quiet = 0
    for i in range(count):
        kid = kids[slot, i]
        if kid & 1:
            code = get_code(deps, kid >> 1)
            if code == LOSS:
                return WIN
            if code == UNKNOWN:
                nolose = True
        elif get_state(partner_states, kid >> 1) != WIN:
            quiet += 1
    if nolose:
        return NOLOSE
    return LOSS if quiet == 0 else COUNTED + quiet


@njit(cache=True, nogil=True, inline="always")
def _settle_queued(states, x, s, lo_word, hi_word):
    w = x // PER_WORD
    if w == lo_word or w == hi_word:
        put_state_shared(states, x, s)
    else:
        put_state(states, x, s)
    return s


@njit(cache=True, nogil=True)
def recount_range(pits, win_kazan, k1, stones, lo, hi, states, partner_states, deps, dep_start, binom):
    """Set the states of the undecided positions of layer (k1, k2) in [lo, hi)
    for a host bringing a pair back from its checkpoints: the decisions so far
    are marked in `states` and `partner_states`, and the quiet children already
    WIN there are left out of the counts. Other tasks may set the states of the
    ranges around this one at once: the words it shares with them are written
    indivisibly. Returns (wins, losses, positions evaluated), pipelined as
    sweep_range is."""
    literally(pits)
    n = 2 * pits
    board = np.empty(n, np.int64)
    ranks = np.empty(kernels.AHEAD, np.int64)
    counts = np.empty(kernels.AHEAD, np.int64)
    wons = np.empty(kernels.AHEAD, np.bool_)
    kids = np.empty((kernels.AHEAD, pits), np.int64)
    wins = 0
    losses = 0
    queued = 0
    done = 0
    if lo >= hi:
        return wins, losses, queued
    lo_word = lo // PER_WORD
    hi_word = (hi - 1) // PER_WORD
    unrank(lo, stones, binom, board)
    for x in range(lo, hi):
        if _undecided(get_state(states, x)):
            slot = queued & (kernels.AHEAD - 1)
            if queued - done == kernels.AHEAD:
                s = _state_of_queued(kids, slot, counts[slot], wons[slot], partner_states, deps)
                _settle_queued(states, ranks[slot], s, lo_word, hi_word)
                wins += s == WIN
                losses += s == LOSS
                done += 1
            ranks[slot] = x
            counts[slot], wons[slot] = _queue_moves(
                board, pits, win_kazan, k1, partner_states, deps, dep_start, binom, kids, slot
            )
            queued += 1
        if x + 1 < hi:
            successor(board)
    while done < queued:
        slot = done & (kernels.AHEAD - 1)
        s = _state_of_queued(kids, slot, counts[slot], wons[slot], partner_states, deps)
        _settle_queued(states, ranks[slot], s, lo_word, hi_word)
        wins += s == WIN
        losses += s == LOSS
        done += 1
    return wins, losses, queued


# Round 0 sets states a block of BLOCK_WORDS state words at a time: every
# position's moves first, each capture's dependency word prefetched, then the
# captures' codes read, then the block's states packed and stored a word at a
# time. Pair 8-12's round 0 took 11.8 s on 2 cores as recount_range's pipeline
# of one position at a time, 8.5 s so.
BLOCK_WORDS = 16


@njit(cache=True, nogil=True)
def first_range(pits, win_kazan, k1, stones, lo, hi, states, deps, dep_start, binom, out, out_lo):
    """Round 0 of layer (k1, k2) on positions [lo, hi): every state set (all are
    undecided before: every paired position is, so quiet moves are only
    counted), and the round's decisions (a move wins at once or reaches a lost
    dependency position: WIN; no move, or every capture reaches a WIN and there
    is no quiet move: LOSS) into `out` at x - out_lo. Words of `states` this
    range shares with the ranges beside it are written indivisibly. Returns
    (wins, losses, positions evaluated)."""
    literally(pits)
    n = 2 * pits
    board = np.empty(n, np.int64)
    block = BLOCK_WORDS * PER_WORD
    quiet = np.empty(block, np.int64)
    won = np.empty(block, np.bool_)
    nolose = np.empty(block, np.bool_)
    where = np.empty(block * pits, np.int64)
    target = np.empty(block * pits, np.int64)
    wins = 0
    losses = 0
    if lo >= hi:
        return wins, losses, 0
    unrank(lo, stones, binom, board)
    start = lo
    while start < hi:
        # [start, stop): whole state words but at the range's two ends
        stop = min(hi, (start // PER_WORD + BLOCK_WORDS) * PER_WORD)
        caps = 0
        for i in range(stop - start):
            opponent = kernels.opponent_stones(board, pits)
            count = 0
            win = False
            for pit in range(pits):
                outcome, captured, laps, rest, keep, last = landing(board, opponent, pit, pits, k1, win_kazan)
                win |= outcome == MOVE_WIN
                if outcome == MOVE_ON:
                    if captured == 0:
                        count += 1
                    else:
                        child = dep_start[captured // 2 - 1] + child_rank(
                            board, pit, pits, binom, captured, laps, rest, keep, last
                        )
                        where[caps] = i
                        target[caps] = child
                        prefetch(deps, child >> 5)
                        caps += 1
            quiet[i] = count
            won[i] = win
            nolose[i] = False
            if start + i + 1 < hi:
                successor(board)
        for c in range(caps):
            code = get_code(deps, target[c])
            i = where[c]
            won[i] |= code == LOSS
            nolose[i] |= code == UNKNOWN
        x = start
        while x < stop:
            w = x // PER_WORD
            upto = min(stop, (w + 1) * PER_WORD)
            word = np.uint64(0)
            for y in range(x, upto):
                i = y - start
                st = (
                    WIN
                    if won[i]
                    else (NOLOSE if nolose[i] else (LOSS if quiet[i] == 0 else COUNTED + quiet[i]))
                )
                word |= np.uint64(st) << np.uint64(BITS * (y - PER_WORD * w))
                if st == WIN:
                    wins += 1
                    set_code(out, y - out_lo, WIN)
                elif st == LOSS:
                    losses += 1
                    set_code(out, y - out_lo, LOSS)
            if x == w * PER_WORD and upto == (w + 1) * PER_WORD:
                states[w] = word
            else:  # a word shared with the range beside this one
                mask = np.uint64(0)
                for y in range(x, upto):
                    mask |= _MASK << np.uint64(BITS * (y - PER_WORD * w))
                while True:
                    old = states[w]
                    if compare_and_swap(states, w, old, (old & ~mask) | word) == old:
                        break
            x = upto
        start = stop
    return wins, losses, hi - lo


# -- later rounds: each decided position's un-moves, once --------------------------------
@njit(cache=True, nogil=True, inline="always")
def _next_decided(fresh, base, lo, hi, w, bits):
    """The next source (WIN or LOSS) of `fresh` inside [lo, hi): (rank or -1, its
    code, w, bits), where `bits` holds the decided positions of word w not yet
    returned (decided_bits); a scan starts at w = lo // 32 - 1 with no bits."""
    end = (hi + 31) >> 5
    while True:
        while bits == 0:
            w += 1
            if w >= end:
                return -1, np.uint64(0), w, bits
            bits = decided_bits(fresh[w - base])
        shift = trailing_zeros(bits)
        bits &= bits - np.uint64(1)
        x = w * 32 + (shift >> 1)
        if x >= hi:
            return -1, np.uint64(0), w, np.uint64(0)
        if x >= lo:
            return x, (fresh[w - base] >> np.uint64(shift)) & np.uint64(3), w, bits


@njit(cache=True, nogil=True, inline="always")
def _found_mark(found, x, code):
    atomic_or(found, x >> 5, np.uint64(code) << np.uint64((x & 31) << 1))


@njit(cache=True, nogil=True, inline="always")
def _reached(states, found, x, child_code):
    """Predecessor x of a decided child: WIN if the child is a LOSS (1 returned),
    else one move fewer unknown, LOSS at none left (2 returned). A state already
    decided is left alone. Every change is a compare-and-swap of x's word, so
    tasks on a host may reach x at once; the decision also goes into the round
    array `found` (2-bit codes, OR-ed indivisibly)."""
    w = x // PER_WORD
    shift = np.uint64(BITS * (x - PER_WORD * w))
    while True:
        old = states[w]
        s = (old >> shift) & _MASK
        if child_code == LOSS:
            if not _undecided(s):
                return 0
            new = (old & ~(_MASK << shift)) | (np.uint64(WIN) << shift)
        else:
            if s <= COUNTED:
                return 0  # decided, or NOLOSE: a WIN child changes nothing
            new = old - (np.uint64(1) << shift)
        if compare_and_swap(states, w, old, new) == old:
            if child_code == LOSS:
                _found_mark(found, x, WIN)
                return 1
            if s == COUNTED + 1:
                _found_mark(found, x, LOSS)
                return 2
            return 0


# A walk over a large layer gathers its predecessors first and updates them in
# rank order, a batch of SORT_BATCH at a time: on pair 2-4 (4.4×10⁹ positions a
# layer, 1.7 GB of states) an un-move cost 161 ns updated where it was ranked and
# 76 ns with no update at all, so the random reads of the states and the round
# array were more than half of a walk; on pair 8-12 (80 MB of states) 79 ns
# against 55. Sorted by the top bits of the rank into SORT_BUCKETS buckets (one
# counting pass), a batch's updates run through the arrays in one direction.
# Measured on one core, an un-move updated where ranked against sorted: pair
# 2-4 218 -> 152 ns, 4-6 186 -> 144, 4-12 (211 MB of states a layer) 88 -> 81,
# 6-14 (80 MB) 99 -> 98: layers above SORT_ABOVE_BYTES of states sort.
SORT_BATCH = 1 << 22
SORT_BUCKETS = 1 << 12
SORT_ABOVE_BYTES = 128 << 20


@njit(cache=True, nogil=True)
def _bucket_shift(npos):
    """The shift that puts ranks below npos into SORT_BUCKETS buckets."""
    shift = 0
    while (npos - 1) >> shift >= SORT_BUCKETS:
        shift += 1
    return shift


@njit(cache=True, nogil=True)
def _apply_sorted(batch, fill, spare, shift, states, found, log, logged):
    """Update the predecessors of batch[:fill] (rank << 1 | 1 for a LOSS child,
    << 1 for a WIN child) in rank-bucket order, through `spare` (as large as
    batch). Returns (new wins, new losses, decisions logged or not)."""
    counts = np.zeros(SORT_BUCKETS + 1, np.int64)
    for i in range(fill):
        counts[(batch[i] >> (shift + 1)) + 1] += 1
    for b in range(SORT_BUCKETS):
        counts[b + 1] += counts[b]
    for i in range(fill):
        b = batch[i] >> (shift + 1)
        spare[counts[b]] = batch[i]
        counts[b] += 1
    wins = 0
    losses = 0
    ahead = min(fill, kernels.PREDS)
    for i in range(ahead):
        y = spare[i] >> 1
        prefetch(states, y // PER_WORD)
        prefetch(found, y >> 5)
    for i in range(fill):
        if i + ahead < fill:
            z = spare[i + ahead] >> 1
            prefetch(states, z // PER_WORD)
            prefetch(found, z >> 5)
        y = spare[i] >> 1
        made = _reached(states, found, y, LOSS if spare[i] & 1 else WIN)
        if logged < log.shape[0]:
            log[logged] = y
        logged += made != 0
        wins += made == 1
        losses += made == 2
    return wins, losses, logged


@njit(cache=True, nogil=True)
def walk_range(
    pits, stones, fresh, fresh_lo, lo, hi, listed, values, states, found, binom, log, batch, spare
):
    """Walk the un-moves of the partner layer's positions decided last round onto
    their predecessors in this layer (`states`, updated in place; this round's
    decisions also gather in `found`). The sources are either the codes `fresh`
    (position fresh_lo + i at index i, fresh_lo a multiple of 32), those with
    rank in [lo, hi); or, when `listed` is not empty, the positions `listed`
    with their codes `values` (a tail round's few sources, without a scan of
    the chunk). The ranks this call decides go into `log` as far as it holds
    them. Returns (new wins, new losses, un-moves walked, decisions logged or
    not: their number).

    A predecessor's state and round-array words are prefetched when it is ranked
    and updated PREDS predecessors later, so the reads overlap; or, given a
    `batch` array (and a `spare` one as large), the predecessors gather there and
    are updated in rank order when it fills (_apply_sorted)."""
    literally(pits)
    n = 2 * pits
    child = np.empty(n, np.int64)
    after = np.empty(n, np.int64)
    specs = np.empty((pits * (n + 1), 3), np.int64)
    ring = np.empty(kernels.PREDS, np.int64)
    kinds = np.empty(kernels.PREDS, np.int64)
    queued = 0
    done = 0
    wins = 0
    losses = 0
    logged = 0
    base = fresh_lo >> 5
    sorting = batch.shape[0] > 0
    room = batch.shape[0] - pits * (n + 1)  # a source's predecessors always fit
    shift = _bucket_shift(states.shape[0] * PER_WORD)
    fill = 0
    walked = 0
    at = -1 - kernels.WALK
    w, bits = (lo >> 5) - 1, np.uint64(0)
    i = 0
    while True:
        if listed.shape[0] > 0:
            if i == listed.shape[0]:
                break
            target, code = listed[i], np.uint64(values[i])
            i += 1
        else:
            target, code, w, bits = _next_decided(fresh, base, lo, hi, w, bits)
            if target < 0:
                break
        at = kernels._reach(child, at, target, stones, binom)
        if sorting:
            loss = 1 if code == LOSS else 0
            for p in range(unmove_specs(child, pits, after, specs)):
                x = unmove_rank(after, pits, specs[p, 0], specs[p, 1], specs[p, 2], binom)
                batch[fill] = (x << 1) | loss
                fill += 1
            if fill > room:
                more_wins, more_losses, logged = _apply_sorted(
                    batch, fill, spare, shift, states, found, log, logged
                )
                wins += more_wins
                losses += more_losses
                walked += fill
                fill = 0
            continue
        for p in range(unmove_specs(child, pits, after, specs)):
            if queued - done == kernels.PREDS:
                # Written out here and below: as an inlined function this update
                # cost pair 8-12's round-1 walk 28% (11.1 s against 8.6 s, one
                # core). A rank is logged whether or not it is a decision, and
                # kept by counting it (a branch on it cost as much again).
                y = ring[done & (kernels.PREDS - 1)]
                made = _reached(states, found, y, kinds[done & (kernels.PREDS - 1)])
                if logged < log.shape[0]:
                    log[logged] = y
                logged += made != 0
                wins += made == 1
                losses += made == 2
                done += 1
            x = unmove_rank(after, pits, specs[p, 0], specs[p, 1], specs[p, 2], binom)
            slot = queued & (kernels.PREDS - 1)
            ring[slot] = x
            kinds[slot] = code
            queued += 1
            prefetch(states, x // PER_WORD)
            prefetch(found, x >> 5)
    while done < queued:
        y = ring[done & (kernels.PREDS - 1)]
        made = _reached(states, found, y, kinds[done & (kernels.PREDS - 1)])
        if logged < log.shape[0]:
            log[logged] = y
        logged += made != 0
        wins += made == 1
        losses += made == 2
        done += 1
    if fill:
        more_wins, more_losses, logged = _apply_sorted(batch, fill, spare, shift, states, found, log, logged)
        wins += more_wins
        losses += more_losses
        walked += fill
    return wins, losses, queued + walked, logged


@njit(cache=True, nogil=True)
def states_at(states, ranks, out):
    """out[i] = the state of position ranks[i] (WIN 1 and LOSS 2 are also their codes)."""
    for i in range(ranks.shape[0]):
        out[i] = get_state(states, ranks[i])


# -- between states and codes --------------------------------------------------------------
@njit(cache=True, nogil=True)
def states_to_codes(states, lo, count, out):
    """out (2-bit codes, position lo + i at index i, zeros on entry) gets the
    decided positions among lo .. lo + count - 1; undecided ones stay 0 (DRAW at
    the fixpoint). Returns (wins, losses)."""
    wins = 0
    losses = 0
    for i in range(count):
        s = get_state(states, lo + i)
        if s == WIN:
            set_code(out, i, WIN)
            wins += 1
        elif s == LOSS:
            set_code(out, i, LOSS)
            losses += 1
    return wins, losses


@njit(cache=True, nogil=True)
def mark_dense(states, lo, chunk, count):
    """Mark the decisions of a chunk's codes (position lo + i at index i) in the
    states; returns how many were undecided there before."""
    new = 0
    for w in range(code_arrays.code_words(count)):
        word = chunk[w]
        if word == 0:
            continue
        for j in range(32):
            code = (word >> np.uint64(2 * j)) & np.uint64(3)
            i = w * 32 + j
            if (code == WIN or code == LOSS) and i < count:
                if _undecided(get_state(states, lo + i)):
                    new += 1
                put_state(states, lo + i, code)
    return new


@njit(cache=True, nogil=True)
def mark_sparse(states, ranks, values):
    new = 0
    for i in range(ranks.shape[0]):
        if _undecided(get_state(states, ranks[i])):
            new += 1
        put_state(states, ranks[i], values[i])
    return new


@njit(cache=True, nogil=True)
def count_states(states, npos):
    """(wins, losses, undecided) among the first npos positions."""
    wins = 0
    losses = 0
    for x in range(npos):
        s = get_state(states, x)
        wins += s == WIN
        losses += s == LOSS
    return wins, losses, npos - wins - losses


def mark(states: States, delta: Delta) -> int:
    """Mark a round's decisions in a layer's states; returns how many are new."""
    if delta.dense is not None:
        return int(mark_dense(states, delta.lo, delta.dense, delta.hi - delta.lo))
    if delta.ranks is not None and len(delta.ranks):
        assert delta.values is not None  # a checkpoint's sparse part carries its codes
        return int(mark_sparse(states, delta.ranks, delta.values))
    return 0


class CountingState(RoundState):
    """A pair solved by counting: each layer's states (3 bits a position) plus the
    round array and dependency bundles of RoundState.

    Given no arrays they are made here (a pair solved whole in one task, tests);
    a large pair's live in the host's shared memory (run/hostcount.py)."""

    def __init__(
        self,
        variant: Variant,
        a: int,
        b: int,
        dep_codes: Mapping[Layer, Codes] | None = None,
        with_dtz: bool = False,
        *,
        states: dict[Layer, States] | None = None,
        found: dict[Layer, Codes] | None = None,
        bundles: dict[Layer, Bundle] | None = None,
    ) -> None:
        super().__init__(variant, a, b, dep_codes, with_dtz, found=found, bundles=bundles)
        self.states = (
            states if states is not None else {layer: new_states(self.size) for layer in self.layers}
        )

    def first_round(self, layer: Layer, lo: int, hi: int) -> Delta:
        """Round 0 for positions [lo, hi) of layer: every state set, and the round's
        decisions returned chunk-local (as a sweep's)."""
        out = code_arrays.new_codes(hi - lo)
        v = self.variant
        args = (v.pits, v.win_kazan, layer[0], self.stones, lo, hi, self.states[layer], *self.deps[layer])
        wins, losses, evaluated = kernels.call_specialized(first_range, (*args, v.binom, out, lo))
        return Delta(
            layer, 0, lo, hi, dense=out, wins=int(wins), losses=int(losses), evaluations=int(evaluated)
        )

    def recount(self, layer: Layer, lo: int, hi: int) -> int:
        """Set the counts of the undecided positions of layer in [lo, hi) from the
        paired layer's WINs marked so far (a pair brought back from its checkpoints);
        returns the positions evaluated."""
        v = self.variant
        args = (v.pits, v.win_kazan, layer[0], self.stones, lo, hi, self.states[layer])
        return int(
            kernels.call_specialized(
                recount_range, (*args, self.states[partner(layer)], *self.deps[layer], v.binom)
            )[2]
        )

    def walk(
        self,
        source_layer: Layer,
        fresh: Codes,
        fresh_lo: int,
        lo: int,
        hi: int,
        listed: npt.NDArray[np.int64] = _NONE,
        values: npt.NDArray[np.uint8] = _NO_VALUES,
        log: npt.NDArray[np.int64] = _NONE,
    ) -> tuple[int, int, int, int]:
        """Walk the un-moves of source_layer's positions decided last round onto the
        partner layer: those with rank in [lo, hi) of `fresh` (from position
        fresh_lo on), or the positions `listed` with their codes `values`. The
        decisions gather in found[partner] (take() collects them) and, as far as
        it holds them, in `log`. Returns (wins, losses, un-moves, decisions) made
        by this call."""
        v = self.variant
        layer = partner(source_layer)
        states = self.states[layer]
        if listed.shape[0] == 0 and states.nbytes > SORT_ABOVE_BYTES:
            batch, spare = np.empty(SORT_BATCH, np.int64), np.empty(SORT_BATCH, np.int64)
        else:
            batch = spare = _NONE
        args = (v.pits, self.stones, fresh, fresh_lo, lo, hi, listed, values)
        wins, losses, unmoves, logged = kernels.call_specialized(
            walk_range, (*args, states, self.found[layer], v.binom, log, batch, spare)
        )
        return int(wins), int(losses), int(unmoves), int(logged)

    def listed_delta(
        self, layer: Layer, lo: int, hi: int, round_: int, ranks: npt.NDArray[np.int64]
    ) -> Delta:
        """The sparse Delta of this round's decisions `ranks` (sorted, in [lo, hi))
        of layer, their values read from the states; what take() gives, without a
        scan of the round array."""
        values = np.empty(ranks.shape[0], np.uint8)
        states_at(self.states[layer], ranks, values)
        wins = int(np.count_nonzero(values == WIN))
        return Delta(layer, round_, lo, hi, ranks=ranks, values=values, wins=wins, losses=len(ranks) - wins)

    def apply(self, deltas: Iterable[Delta]) -> int:
        """Mark decisions in the states (a walk marks its own already: marking again
        changes nothing); returns how many positions they newly decide."""
        new = 0
        for delta in deltas:
            new += mark(self.states[delta.layer], delta)
            self.stamp(delta)
        return new

    def codes_of(self, layer: Layer, lo: int = 0, hi: int | None = None) -> tuple[Codes, int, int]:
        """Positions [lo, hi) of layer as 2-bit codes (undecided: 0, DRAW at the
        fixpoint), position lo + i at index i; with (wins, losses) among them."""
        hi = self.size if hi is None else hi
        out = code_arrays.new_codes(hi - lo)
        wins, losses = states_to_codes(self.states[layer], lo, hi - lo, out)
        return out, int(wins), int(losses)

    def undecided(self) -> int:
        return sum(int(count_states(s, self.size)[2]) for s in self.states.values())


def solve_pair_counting(
    variant: Variant,
    a: int,
    b: int,
    dep_codes: Mapping[Layer, Codes] | None,
    on_round: Callable[[int, list[Delta]], object] | None = None,
    with_dtz: bool = False,
    bundles: dict[Layer, Bundle] | None = None,
) -> PairResult:
    """pair.solve_pair by counting (see the module's text): the same values,
    rounds and distances."""
    start = time.perf_counter()
    state = CountingState(variant, a, b, dep_codes, with_dtz, bundles=bundles)
    result = PairResult(codes={})
    deltas = [state.first_round(layer, 0, state.size) for layer in state.layers]
    round_ = 0
    while True:
        decided = sum(d.decided for d in deltas)
        result.rounds += 1
        result.evaluations += sum(d.evaluations for d in deltas)
        result.modes.append(COUNTING)
        result.decided_per_round.append(decided)
        if decided == 0:
            break
        state.apply(deltas)
        if on_round is not None:
            on_round(round_, deltas)
        round_ += 1
        last, deltas = deltas, []
        while last:  # drop each source delta once used
            source = last.pop(0)
            unmoves = state.walk(source.layer, source.codes(state.size), 0, 0, state.size)[2]
            result.unmoves += unmoves
            deltas.append(state.take(partner(source.layer), 0, state.size, round_))
            del source
    result.codes = {layer: state.codes_of(layer)[0] for layer in state.layers}
    if with_dtz:
        result.dtz = {layer: state.distances(layer) for layer in state.layers}
    result.seconds = time.perf_counter() - start
    return result
