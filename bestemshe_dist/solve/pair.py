"""One pair {(a, b), (b, a)}: its state, its rounds, and a whole solve in memory.

A round evaluates positions against the values decided in earlier rounds only
(its own decisions are kept aside in Deltas and applied after it), so a
position decided in round d is exactly d + 1 plies from the next capture or the
end of the game (SPEC.md; positions with no move, decided in round 0, are 0).
Three ways to run a round decide exactly the same positions:

- sweep: evaluate every undecided position (what the original solver does);
- frontier: evaluate only the predecessors (by un-moves) of the positions
  decided in the previous round: nothing else has a changed child. A
  predecessor of a new LOSS is a WIN at once; a predecessor of a new WIN is
  re-checked by its forward moves;
- counting (counting.py): each position keeps a count of its moves not yet
  known, so a predecessor of a new WIN is never re-checked: its count drops.
  3 bits a position instead of 2.

The same PairState and Delta serve a small pair solved whole inside one task and
a large pair whose rounds run as chunk tasks across workers (run/driver.py, run/tasks.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from ..game.geometry import capture_targets, pair_layers, partner
from ..game.variant import Variant
from . import code_arrays, kernels
from .code_arrays import Codes

Layer: TypeAlias = tuple[int, int]
# A layer's capture targets as the kernels read them: (codes end to end, start of each)
Bundle: TypeAlias = tuple[Codes, npt.NDArray[np.int64]]

_NO_LAYER = np.zeros(1, dtype=np.uint64)
SWEEP = "sweep"
FRONTIER = "frontier"
COUNTING = "counting"  # counting.py
METHODS = (COUNTING, FRONTIER, SWEEP)
# A frontier round costs roughly this many sweep evaluations per source position
# (un-moves, ranks, re-evaluations); past that a sweep round is cheaper.
FRONTIER_COST = 2


def dep_bundle(variant: Variant, k1: int, k2: int, layer_codes: Mapping[Layer, Codes] | None) -> Bundle:
    """The capture targets of layer (k1, k2) end to end, as the kernels read them:
    (codes, start) where the layer reached by capturing 2 (j + 1) stones starts at
    position start[j] (a multiple of 32, so each keeps its word layout).
    `layer_codes` may be None for a layer that has no capture target."""
    targets = capture_targets(variant, k1, k2)
    start = np.zeros(kernels.MAX_DEPS, np.int64)
    if not targets:
        return _NO_LAYER, start
    if layer_codes is None:
        raise TypeError(f"layer {k1}_{k2} has capture targets: its bundle needs their codes")
    words = 0
    for k2_child, k1_child in targets:
        start[(k1_child - k1) // 2 - 1] = 32 * words
        words += layer_codes[(k2_child, k1_child)].shape[0]
    return np.concatenate([layer_codes[t] for t in targets]), start


def chunk_ranges(size: int, chunk_size: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + chunk_size, size)) for lo in range(0, size, chunk_size)] or [(0, 0)]


@dataclass
class Delta:
    """Decisions of one round for one layer: dense codes over [lo, hi), or sparse
    (sorted unique ranks with their codes)."""

    layer: Layer
    round: int
    lo: int = 0
    hi: int = 0
    dense: Codes | None = None
    ranks: npt.NDArray[np.int64] | None = None
    values: npt.NDArray[np.uint8] | None = None
    wins: int = 0
    losses: int = 0
    evaluations: int = 0

    @property
    def decided(self) -> int:
        return self.wins + self.losses

    def apply(self, codes: Codes, offset: int = 0) -> int:
        """OR the decisions into codes, where position x sits at x - offset (a
        chunk-local array); returns how many positions they newly decide."""
        if self.dense is not None:
            return int(code_arrays.merge_codes_at(codes, self.lo - offset, self.dense, self.hi - self.lo))
        if self.ranks is not None and len(self.ranks):
            ranks = self.ranks if offset == 0 else self.ranks - offset
            return int(code_arrays.set_codes(codes, ranks, self.values))
        return 0

    def stamp(self, dtz: npt.NDArray[np.unsignedinteger[Any]], lo: int, value: int) -> None:
        """dtz[x - lo] = value for every decision x that falls in dtz's range."""
        if self.dense is not None:
            code_arrays.stamp_range(dtz, lo, self.dense, self.lo, self.hi - self.lo, value)
        elif self.ranks is not None and len(self.ranks):
            inside = self.ranks[(self.ranks >= lo) & (self.ranks < lo + dtz.shape[0])]
            dtz[inside - lo] = value

    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.dense, self.ranks, self.values) if a is not None)

    def decisions(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8] | None]:
        """(ranks, codes) of every decision, sorted by rank (codes None only for a
        sparse Delta made without its values)."""
        if self.dense is None:
            if self.ranks is None:
                return np.zeros(0, np.int64), np.zeros(0, np.uint8)
            return self.ranks, self.values
        ranks = np.empty(self.decided, np.int64)
        values = np.empty(self.decided, np.uint8)
        found = code_arrays.decided_in(self.dense, self.hi - self.lo, self.lo, ranks, values)
        return ranks[:found], values[:found]

    def codes(self, size: int) -> Codes:
        """The decisions as codes over the whole layer of `size` positions."""
        if self.dense is not None and self.lo == 0 and self.hi == size:
            return self.dense
        codes = code_arrays.new_codes(size)
        self.apply(codes)
        return codes

    def sparse(self) -> Delta:
        """The same decisions as rank lists (a smaller checkpoint when they are few)."""
        ranks, values = self.decisions()
        return Delta(
            self.layer,
            self.round,
            self.lo,
            self.hi,
            None,
            ranks,
            values,
            self.wins,
            self.losses,
            self.evaluations,
        )


class RoundState:
    """What every method keeps for a pair besides its values: the round array,
    the dependency bundles and (with_dtz) the distances.

    found: layer -> the round array where a round's decisions for that layer
           gather (shared by the tasks of a round, and by both layers, one
           after the other; emptied by take());
    bundles: layer -> (deps, dep_start) as the kernels read them.
    Given no arrays (a small pair solved whole in one task, tests), they are made
    here; a large pair's live in the host's shared memory (run/hostpair.py).
    with_dtz also keeps each decided position's distance (round + 1), 16 bits
    each: only for pairs solved whole, whose size is at most a chunk; a large
    pair's distances come from its checkpoints at publication (distances_from).
    """

    def __init__(
        self,
        variant: Variant,
        a: int,
        b: int,
        dep_codes: Mapping[Layer, Codes] | None = None,
        with_dtz: bool = False,
        *,
        found: dict[Layer, Codes] | None = None,
        bundles: dict[Layer, Bundle] | None = None,
    ) -> None:
        self.variant = variant
        self.layers = pair_layers(a, b)
        self.size = variant.layer_size(a, b)
        self.stones = variant.board_stones(a, b)
        # One round array serves both layers: a round decides one layer (from its
        # partner's sources), takes the decisions out, then the other.
        if found is None:
            shared = code_arrays.new_codes(self.size)
            found = dict.fromkeys(self.layers, shared)
        self.found = found
        self.deps = (
            bundles
            if bundles is not None
            else {layer: dep_bundle(variant, *layer, dep_codes) for layer in self.layers}
        )
        self.dtz: dict[Layer, npt.NDArray[np.uint16]] | None = (
            {layer: np.zeros(self.size, np.uint16) for layer in self.layers} if with_dtz else None
        )

    def take(self, layer: Layer, lo: int, hi: int, round_: int, clear: bool = True) -> Delta:
        """The round's decisions of layer in [lo, hi), out of found[layer] (which
        `clear` empties there; else clear() does, once they are safe)."""
        out = code_arrays.new_codes(hi - lo)
        wins, losses = code_arrays.take_decisions(self.found[layer], lo, hi, out, clear)
        return Delta(layer, round_, lo, hi, dense=out, wins=int(wins), losses=int(losses))

    def clear(self, layer: Layer, lo: int, hi: int) -> None:
        code_arrays.clear_range(self.found[layer], lo, hi)

    def stamp(self, delta: Delta) -> None:
        """Record a round's decisions as distances (with_dtz)."""
        if self.dtz is not None:
            if delta.round + 1 > np.iinfo(np.uint16).max:
                raise OverflowError("a distance does not fit in 16 bits")
            delta.stamp(self.dtz[delta.layer], 0, delta.round + 1)

    def distances(self, layer: Layer) -> npt.NDArray[np.uint16]:
        """The layer's distance table: round + 1 for decided positions, 0 for draws
        and for positions with no move (they are decided in round 0 without a ply)."""
        if self.dtz is None:
            raise TypeError("distances are kept only by a state made with_dtz")
        dtz = self.dtz[layer]
        clear_no_move(self.variant, self.stones, dtz, 0)
        return dtz


class PairState(RoundState):
    """The codes of a pair's layers (2 bits a position; the sweep and frontier
    methods) plus what RoundState keeps: codes maps layer -> this pair's codes
    (decisions of the rounds applied so far)."""

    def __init__(
        self,
        variant: Variant,
        a: int,
        b: int,
        dep_codes: Mapping[Layer, Codes] | None = None,
        with_dtz: bool = False,
        *,
        codes: dict[Layer, Codes] | None = None,
        found: dict[Layer, Codes] | None = None,
        bundles: dict[Layer, Bundle] | None = None,
    ) -> None:
        super().__init__(variant, a, b, dep_codes, with_dtz, found=found, bundles=bundles)
        self.codes = (
            codes if codes is not None else {layer: code_arrays.new_codes(self.size) for layer in self.layers}
        )
        self.round = -1  # the last round whose decisions are applied

    def sweep(self, layer: Layer, lo: int, hi: int, round_: int) -> Delta:
        """Evaluate every undecided position of layer in [lo, hi); the decisions come
        back chunk-local (a task holds its chunk only)."""
        v = self.variant
        out = code_arrays.new_codes(hi - lo)
        own = self.codes[layer]
        wins, losses, undecided = kernels.call_specialized(
            kernels.sweep_range,
            (
                v.pits,
                v.win_kazan,
                layer[0],
                self.stones,
                lo,
                hi,
                own,
                self.codes[partner(layer)],
                *self.deps[layer],
                v.binom,
                out,
                lo,
                round_ == 0,
            ),
        )
        return Delta(
            layer, round_, lo, hi, dense=out, wins=int(wins), losses=int(losses), evaluations=int(undecided)
        )

    def frontier(
        self, source_layer: Layer, fresh: Codes, fresh_lo: int, lo: int, hi: int
    ) -> tuple[int, int, int]:
        """Re-evaluate the predecessors (in the partner layer) of the positions of
        source_layer with rank in [lo, hi) decided last round (`fresh`: codes from
        position fresh_lo on holding just those decisions). The decisions gather in
        found[partner] (take() collects them). Returns (wins, losses, evaluated)
        made by this call."""
        v = self.variant
        layer = partner(source_layer)
        wins, losses, evaluated = kernels.call_specialized(
            kernels.frontier_range,
            (
                v.pits,
                v.win_kazan,
                layer[0],
                self.stones,
                fresh,
                fresh_lo,
                lo,
                hi,
                self.codes[layer],
                self.found[layer],
                self.codes[source_layer],
                *self.deps[layer],
                v.binom,
            ),
        )
        return int(wins), int(losses), int(evaluated)

    def apply(self, deltas: Iterable[Delta]) -> int:
        """Apply decisions; returns how many positions they newly decide."""
        new = 0
        for delta in deltas:
            new += delta.apply(self.codes[delta.layer])
            self.stamp(delta)
        return new

    def undecided(self) -> int:
        return sum(int(code_arrays.count_codes(c, self.size)[2]) for c in self.codes.values())


def clear_no_move(variant: Variant, stones: int, dtz: npt.NDArray[np.unsignedinteger[Any]], lo: int) -> None:
    """Zero the distances of the positions with no move among dtz (which holds
    positions lo, lo + 1, ...): they are decided in round 0 without a ply."""
    v = variant
    out = np.empty(v.binom[stones + v.pits - 1, v.pits - 1], np.int64)
    found = kernels.no_move_ranks(v.pits, stones, v.binom, out)
    ranks = out[:found] - lo
    dtz[ranks[(ranks >= 0) & (ranks < dtz.shape[0])]] = 0


def distances_from(
    variant: Variant, stones: int, lo: int, hi: int, rounds: Iterable[Iterable[Delta]], width: int = 2
) -> npt.NDArray[np.unsignedinteger[Any]]:
    """Distances of positions [lo, hi) of a layer from its checkpoints: `rounds`
    yields, round by round from round 0, that round's Deltas of the layer that
    touch the range. A position decided in round r is r + 1 plies away; draws and
    positions with no move are 0. Holds the range only, `width` bytes a position."""
    dtz = np.zeros(hi - lo, np.uint8 if width == 1 else np.uint16)
    top = np.iinfo(dtz.dtype).max
    for round_, deltas in enumerate(rounds):
        if round_ + 1 > top:
            raise OverflowError(f"a distance does not fit in {width} byte(s)")
        for delta in deltas:
            delta.stamp(dtz, lo, round_ + 1)
    clear_no_move(variant, stones, dtz, lo)
    return dtz


def choose_mode(method: str, round_: int, last_decided: int, undecided: int, positions: int) -> str:
    """Which kind of round comes next (both decide the same positions). A sweep
    costs an evaluation per undecided position plus a walk over all positions
    (about a twentieth of an evaluation each: the odometer and a code read); a
    frontier round costs about FRONTIER_COST evaluations per source."""
    if method == SWEEP or round_ == 0:
        return SWEEP
    return FRONTIER if last_decided * FRONTIER_COST < undecided + positions // 20 else SWEEP


@dataclass
class PairResult:
    codes: dict[Layer, Codes]  # layer -> code array (UNKNOWN now means DRAW)
    dtz: dict[Layer, npt.NDArray[np.uint16]] | None = None  # layer -> distances (with_dtz only)
    rounds: int = 0
    evaluations: int = 0  # positions evaluated, over all rounds
    unmoves: int = 0  # un-moves walked (counting), over all rounds
    seconds: float = 0.0
    modes: list[str] = field(default_factory=list)
    decided_per_round: list[int] = field(default_factory=list)


def solve_pair(
    variant: Variant,
    a: int,
    b: int,
    dep_codes: Mapping[Layer, Codes] | None,
    method: str = FRONTIER,
    on_round: Callable[[int, list[Delta]], object] | None = None,
    with_dtz: bool = False,
    bundles: dict[Layer, Bundle] | None = None,
) -> PairResult:
    """Solve a pair whole in memory. dep_codes maps every capture target of the
    pair's layers to its codes (or `bundles` gives them as the kernels read them).
    on_round(round, deltas) sees each round's decisions."""
    if method == COUNTING:
        from .counting import solve_pair_counting  # counting.py builds on this module

        return solve_pair_counting(variant, a, b, dep_codes, on_round, with_dtz, bundles)
    start = time.perf_counter()
    state = PairState(variant, a, b, dep_codes, with_dtz, bundles=bundles)
    result = PairResult(codes=state.codes)
    last: list[Delta] = []
    undecided = state.size * len(state.layers)
    round_ = 0
    while True:
        mode = choose_mode(
            method, round_, sum(d.decided for d in last), undecided, state.size * len(state.layers)
        )
        if mode == SWEEP:
            last = []
            deltas = [state.sweep(layer, 0, state.size, round_) for layer in state.layers]
        else:
            deltas = []
            while last:  # drop each source delta once used: one layer of codes less at the peak
                source = last.pop(0)
                evaluated = state.frontier(source.layer, source.codes(state.size), 0, 0, state.size)[2]
                deltas.append(state.take(partner(source.layer), 0, state.size, round_))
                deltas[-1].evaluations = evaluated
                del source
        decided = sum(d.decided for d in deltas)
        result.rounds += 1
        result.evaluations += sum(d.evaluations for d in deltas)
        result.modes.append(mode)
        result.decided_per_round.append(decided)
        if decided == 0:
            break
        state.apply(deltas)
        if on_round is not None:
            on_round(round_, deltas)
        undecided -= decided
        last = deltas
        round_ += 1
    if with_dtz:
        result.dtz = {layer: state.distances(layer) for layer in state.layers}
    result.seconds = time.perf_counter() - start
    return result
