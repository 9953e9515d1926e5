"""What Dask workers run: solve a pair, publish a layer. Called with small
arguments (a Job, a PairPlan, manifest entries); layer data never leaves the
worker except through the store.
"""
from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from .pair import pair_layers, solve_pair
from .plan import PairPlan
from .store import PRIVATE, Store, manifest_key
from .tables import encode_layer, layer_file_name
from .variant import Variant


@dataclass(frozen=True)
class Job:
    """Everything a task needs to find the store; credentials stay out of repr."""
    url: str
    variant: Variant
    storage_options: dict = field(default_factory=dict, repr=False, compare=False)
    method: str = "frontier"

    def store(self) -> Store:
        return Store(self.url, self.storage_options)


def staged_name(k1: int, k2: int, kind: str) -> str:
    return f"{PRIVATE}/staging/{layer_file_name(k1, k2, kind)}"


class LayerCache:
    """Dependency layers decoded once per worker process (2 bits per position),
    shared by every task on it, least recently used dropped past a byte budget."""

    def __init__(self, budget_bytes: int | None = None):
        self._lock = threading.Lock()
        self._items: OrderedDict = OrderedDict()
        self._loading: dict = {}
        self.budget_bytes = budget_bytes

    def _budget(self) -> int:
        if self.budget_bytes is not None:
            return self.budget_bytes
        try:
            from distributed import get_worker
            limit = get_worker().memory_manager.memory_limit
        except (ImportError, ValueError, AttributeError):
            limit = None
        return int(limit * 0.4) if limit else 4 << 30

    def get(self, job: Job, layer: tuple, sha256: str | None):
        key = (job.url, layer, sha256)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:  # one thread decodes; the others wait for its result
            with self._lock:
                if key in self._items:
                    return self._items[key]
            codes = job.store().read_layer_codes(job.variant, *layer)
            with self._lock:
                self._items[key] = codes
                self._loading.pop(key, None)
                self._evict()
            return codes

    def _evict(self) -> None:
        budget = self._budget()
        total = sum(c.nbytes for c in self._items.values())
        while len(self._items) > 1 and total > budget:
            _, codes = self._items.popitem(last=False)
            total -= codes.nbytes

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


LAYERS = LayerCache()


def solve_pair_task(job: Job, pair: PairPlan, dep_shas: dict, *dep_entries) -> dict:
    """Solve a pair whole, write its layer files to staging; return their entries.

    dep_entries are the results of the dependency layers' publish tasks (so the
    graph shows the dependency); dep_shas covers layers published before this run.
    """
    shas = dict(dep_shas)
    for entry in dep_entries:
        shas[(entry["k1"], entry["k2"])] = entry["sha256"]["win"]
    variant = job.variant
    deps = {layer: LAYERS.get(job, layer, shas.get(layer)) for layer in pair.deps}
    result = solve_pair(variant, pair.a, pair.b, deps, method=job.method)
    store = job.store()
    npos = pair.layer_size
    entries = {}
    for k1, k2 in pair_layers(pair.a, pair.b):
        start = time.perf_counter()
        win, draw, (wins, draws, losses) = encode_layer(result.codes[(k1, k2)], npos)
        files = {}
        for kind, data in (("win", win), ("draw", draw)):
            store.write_bytes(staged_name(k1, k2, kind), data)
            files[kind] = (len(data), hashlib.sha256(data).hexdigest())
        entries[(k1, k2)] = {
            "k1": k1, "k2": k2, "pair": pair.key, "positions": npos,
            "bytes": {kind: size for kind, (size, _) in files.items()},
            "sha256": {kind: digest for kind, (_, digest) in files.items()},
            "counts": {"win": wins, "draw": draws, "loss": losses},
            "solve_seconds": round(result.seconds, 3),
            "compress_seconds": round(time.perf_counter() - start, 3),
            "rounds": result.rounds,
            "method": job.method,
            "evaluations": result.evaluations,
        }
    return entries


def publish_layer_task(job: Job, layer: tuple, pair_entries: dict) -> dict:
    """Move a layer's staged files into place (each appears whole); the driver
    writes the manifest entry afterwards."""
    k1, k2 = layer
    store = job.store()
    entry = pair_entries[layer]
    for kind in ("win", "draw"):
        store.move(staged_name(k1, k2, kind), layer_file_name(k1, k2, kind))
    return entry


def warm_up() -> float:
    """Compile (or load from numba's cache) every kernel before real work starts,
    so no task pays compile time in its hot path; returns the seconds it took."""
    start = time.perf_counter()
    variant = Variant(stones=6, pits=1)
    solved: dict = {}
    for m in range(2 * (variant.win_kazan - 2), -1, -2):
        for a in variant.kazans:
            b = m - a
            if a <= b and b in variant.kazans:
                result = solve_pair(variant, a, b, solved)
                solved.update(result.codes)
    for layer, codes in solved.items():
        encode_layer(codes, variant.layer_size(*layer))
    return time.perf_counter() - start


def layer_entry_key(entry: dict) -> str:
    return manifest_key(entry["k1"], entry["k2"])
