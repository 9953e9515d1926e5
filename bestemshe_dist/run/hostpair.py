"""What one host holds for the pairs it works on, in shared memory (hostmem.py):

- dependency layers, in one array per kazan row: layer (b, m) sits in row b's
  array at a fixed slot, larger m first. A capture from layer (k1, k2) reaches
  (k2, k1 + 2), (k2, k1 + 4), ...: the slots at the front of row k2, so the
  bundle the kernels read (every capture target end to end) is a view of the
  row, never a copy, and a layer needed by several pairs is held once;
- a large pair's codes (2 bits a position per layer) and its round arrays
  (where a frontier round's decisions gather, atomically, from every task on
  the host), brought up to a round by applying the checkpoints in the store.

So a host holds 2 bits per position of the pair (codes), 2 per position of one
layer (the round array: a frontier round decides one layer, then the other),
2 per position of its dependency layers, and each running task a chunk: whatever the number
of chunks, threads and worker processes (memory.py predicts it).

Dependency layers come from the store (checked against their checksums, a block
at a time straight into their slot) or, for `solve --synthetic-deps`, from a
seeded hash with realistic shares of wins, draws and losses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from ..data.blocks import read_layer_codes
from ..data.checkpoint import decode_part
from ..data.store import read_json
from ..game.dag import PairPlan
from ..game.geometry import capture_targets
from ..game.variant import Variant
from ..naming import applied_mark, codes_array, dep_row, dep_slot, round_array, round_marker, sync_lock
from ..solve import code_arrays, kernels
from ..solve.pair import PairState
from . import hostmem

if TYPE_CHECKING:
    from .tasks import Job

_NO_LAYER = np.zeros(1, dtype=np.uint64)


# -- dependency rows -------------------------------------------------------------------
@cache
def row_slots(variant: Variant, b: int) -> dict[int, tuple[int, int]]:
    """m -> (first word, words) of layer (b, m) in row b's array: every layer a
    capture can reach (m >= 2), larger m first, each slot whole pages."""
    slots: dict[int, tuple[int, int]] = {}
    first = 0
    for m in sorted((m for m in variant.kazans if m >= 2), reverse=True):
        words = hostmem.page_round(code_arrays.code_words(variant.layer_size(b, m)))
        slots[m] = (first, words)
        first += words
    return slots


def row_words(variant: Variant, b: int) -> int:
    return sum(words for _, words in row_slots(variant, b).values()) or hostmem.PAGE_WORDS


@dataclass(frozen=True)
class DepSource:
    """Where dependency layers come from: the store, or (synthetic) a seed."""

    synthetic_seed: int | None = None

    def identity(self, layer: tuple[int, int], sha256: str | None) -> str:
        if self.synthetic_seed is not None:
            return f"synthetic:{self.synthetic_seed}"
        return f"sha256:{sha256}"


def synthetic_shares(variant: Variant, k1: int, k2: int) -> tuple[float, float]:
    """(win, loss) shares of a synthetic layer, as solved layers have them: the side
    ahead on kazans mostly wins (24_4: 99% wins), even layers split about evenly,
    and a few per cent are draws."""
    lead = (k1 - k2) / variant.win_kazan
    win = min(0.97, max(0.02, 0.5 + 0.9 * lead))
    draw = 0.03
    return win * (1 - draw), (1 - win) * (1 - draw)


def fill_synthetic(variant: Variant, seed: int, layer: tuple[int, int], out: NDArray[np.uint64]) -> None:
    win, loss = synthetic_shares(variant, *layer)
    limit = 1 << 32
    salt = layer[0] * 1000 + layer[1]
    code_arrays.synthetic_codes(
        out,
        min(variant.layer_size(*layer), 32 * len(out)),  # a shorter `out`: the layer's first positions
        np.uint64(seed),
        np.uint64(salt),
        np.uint64(int(win * limit)),
        np.uint64(int((win + loss) * limit)),
    )


def dep_bundle(
    space: hostmem.HostSpace,
    job: Job,
    source: DepSource,
    k1: int,
    k2: int,
    shas: dict[tuple[int, int], str],
) -> tuple[NDArray[np.uint64], NDArray[np.int64]]:
    """The capture targets of layer (k1, k2) as the kernels read them, a view of row
    k2's array in host memory (each target loaded there once per host)."""
    variant = job.variant
    targets = capture_targets(variant, k1, k2)
    start = np.zeros(kernels.MAX_DEPS, np.int64)
    if not targets:
        return _NO_LAYER, start
    slots = row_slots(variant, k2)
    row = space.array(dep_row(k2), row_words(variant, k2))
    end = 0
    for layer in targets:
        first, words = slots[layer[1]]
        load_dep(space, job, source, layer, row, shas.get(layer))
        start[(layer[1] - k1) // 2 - 1] = 32 * first
        end = max(end, first + words)
    return row[:end], start


def load_dep(
    space: hostmem.HostSpace,
    job: Job,
    source: DepSource,
    layer: tuple[int, int],
    row: NDArray[np.uint64],
    sha256: str | None,
) -> None:
    """Fill layer's slot of its row once per host (under the slot's lock)."""
    variant = job.variant
    name = dep_slot(layer)
    identity = source.identity(layer, sha256)
    if space.has(name, identity):
        return
    first, _words = row_slots(variant, layer[0])[layer[1]]
    with space.locked(name):
        if space.has(name, identity):
            return
        slot = row[first : first + code_arrays.code_words(variant.layer_size(*layer))]
        if source.synthetic_seed is not None:
            fill_synthetic(variant, source.synthetic_seed, layer, slot)
        else:
            read_layer_codes(job.store(), variant, *layer, out=slot)
        space.mark(name, identity)


def free_deps(space: hostmem.HostSpace, variant: Variant, layers: Iterable[tuple[int, int]]) -> None:
    """Give back the host memory of dependency layers no pending pair needs."""
    for b, m in layers:
        if m not in row_slots(variant, b):
            continue
        first, words = row_slots(variant, b)[m]
        space.array(dep_row(b), row_words(variant, b))  # mapped here, so that free() can reach it
        space.unmark(dep_slot((b, m)))
        space.free(dep_row(b), first, words)


# -- a large pair on a host -----------------------------------------------------------------
def pair_arrays(pair: PairPlan) -> list[str]:
    return [codes_array(pair.key, layer) for layer in pair.layers] + [round_array(pair.key)]


class HostPair:
    """A large pair's state on this host (shared by its processes), with the
    rounds applied so far recorded beside it."""

    def __init__(
        self, job: Job, pair: PairPlan, dep_shas: dict[tuple[int, int], str], source: DepSource
    ) -> None:
        self.job = job
        self.pair = pair
        self.space = hostmem.space(job.space)
        words = code_arrays.code_words(pair.layer_size)
        codes = {l: self.space.array(codes_array(pair.key, l), words) for l in pair.layers}
        shared = self.space.array(round_array(pair.key), words)
        found = dict.fromkeys(pair.layers, shared)  # one layer's round at a time
        bundles = {l: dep_bundle(self.space, job, source, *l, dep_shas) for l in pair.layers}
        self.state = PairState(job.variant, pair.a, pair.b, codes=codes, found=found, bundles=bundles)
        self._unreported = threading.Lock()  # held until a task reports the building

    def built_here(self) -> bool:
        """True for the one task that reports this host's copy as built (the round
        marker says where each pair's arrays were built, and how often)."""
        return self._unreported.acquire(blocking=False)

    def applied(self) -> int:
        return self.space.read_state(applied_mark(self.pair.key), {"round": -1})["round"]

    def sync(self, upto: int) -> dict[int, int]:
        """Apply the checkpointed rounds up to `upto` that this host has not applied.
        Returns {round: positions decided in it} for the rounds applied here (exact:
        what became decided, however many hosts decided it)."""
        if self.applied() >= upto:
            return {}
        exact: dict[int, int] = {}
        with self.space.locked(sync_lock(self.pair.key)):
            store = self.job.store()
            for round_ in range(self.applied() + 1, upto + 1):
                marker = read_json(store, round_marker(self.pair.key, round_))
                exact[round_] = self.state.apply(
                    decode_part(store.read_bytes(name)) for name in marker["parts"]
                )
                self.space.write_state(applied_mark(self.pair.key), {"round": round_})
        return exact


S = TypeVar("S")


class PairsHeld(Generic[S]):
    """This process's state of each pair of each solve run: (space, pair key) ->
    state, made once however many threads ask (the loser of a race keeps the
    winner's)."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], S] = {}
        self._lock = threading.Lock()

    def get(self, space_name: str, pair: PairPlan, make: Callable[[], S]) -> S:
        key = (space_name, pair.key)
        with self._lock:
            found = self._held.get(key)
        if found is None:
            made = make()
            with self._lock:
                found = self._held.setdefault(key, made)
        return found

    def forget(self, space_name: str, pair: PairPlan) -> None:
        with self._lock:
            self._held.pop((space_name, pair.key), None)

    def forget_all(self, space_name: str) -> None:
        with self._lock:
            for key in [k for k in self._held if k[0] == space_name]:
                del self._held[key]


_PAIRS: PairsHeld[HostPair] = PairsHeld()


def host_pair(job: Job, pair: PairPlan, dep_shas: dict[tuple[int, int], str], source: DepSource) -> HostPair:
    return _PAIRS.get(job.space, pair, lambda: HostPair(job, pair, dep_shas, source))


def forget_pair(space_name: str, pair: PairPlan) -> None:
    """Drop a published pair's arrays, and the record of the rounds applied to them:
    a task recomputed later (Dask redoes a finished task whose result died with a
    worker) must start from round 0, and finds the checkpoints gone, rather than
    take fresh zeros for the pair's values."""
    _PAIRS.forget(space_name, pair)
    space = hostmem.space(space_name)
    space.drop(pair_arrays(pair))
    space.forget_state(applied_mark(pair.key))


def forget_all(space_name: str) -> None:
    """This process lets go of every pair of a solve run."""
    _PAIRS.forget_all(space_name)
