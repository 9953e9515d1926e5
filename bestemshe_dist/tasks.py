"""What Dask workers run. Tasks get small arguments (a Job, a PairPlan, round and
chunk numbers, manifest entries); layer data moves only through the store and
the per-worker caches below, never through the driver.

- solve_pair_task / publish_layer_task: a small pair solved whole in one task.
- round_chunk_task: one chunk of one round of a large pair; it brings the
  worker's copy of the pair up to the previous round from the checkpoints in the
  store, evaluates its chunk and writes its decisions (the next checkpoint).
- publish_part_task / assemble_layer_task: a large pair's blocks compressed by
  the workers, then each layer file assembled from the compressed frames.
"""
from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from . import format as fmt
from . import kernels
from .blocks import read_layer_codes
from .cache import OnceCache, worker_memory_budget
from .checksums import FileSums, LayerSums, manifest_record, sums_name
from .pair import FRONTIER, Delta, PairState, solve_pair
from .plan import PairPlan
from .store import PRIVATE, Store, pair_prefix, read_json, round_marker, round_prefix
from .tables import distance_bytes, distance_width, encode_distances, encode_layer, layer_file_name
from .variant import Variant

WORDS_PER_BLOCK = fmt.BLOCK_BITS // 32


@dataclass(frozen=True)
class Job:
    """Everything a task needs to find the store; credentials stay out of repr."""
    url: str
    variant: Variant
    storage_options: dict = field(default_factory=dict, repr=False, compare=False)
    method: str = FRONTIER
    dtz: bool = False               # also write distance tables (layer_*_dtz.bin)

    def store(self) -> Store:
        return Store(self.url, self.storage_options)


def staged(name: str) -> str:
    """Where a small pair's task writes a file before its publish task moves it into place."""
    return f"{PRIVATE}/staging/{name}"


def write_layer_files(store: Store, layer: tuple, outputs: dict, place=lambda name: name):
    """Write a layer's files (kind -> bytes), each whole, then its checksum sidecar,
    at place(name). Returns ({kind: (bytes, sha256)}, the manifest's checksums record)."""
    files, sums = {}, {}
    for kind, data in outputs.items():
        name = layer_file_name(*layer, kind)
        store.write_bytes(place(name), data)
        files[kind] = (len(data), hashlib.sha256(data).hexdigest())
        sums[kind] = FileSums.of_file(data, name)
    made = LayerSums(tuple(layer), sums)
    sidecar = made.to_bytes()
    store.write_bytes(place(sums_name(*layer)), sidecar)
    return files, manifest_record(made, sidecar)


class LayerCache:
    """Dependency layers decoded once per worker process (2 bits per position),
    every frame checked against its checksums, shared by every task on it; least
    recently used dropped past the worker's budget, and dropped when the driver
    says no pair needs them any more."""

    def __init__(self, budget_bytes: int | None = None):
        self._cache = OnceCache(worker_memory_budget if budget_bytes is None else budget_bytes,
                                keep_newest=True)

    def get(self, job: Job, layer: tuple, sha256: str | None):
        def load():
            codes = read_layer_codes(job.store(), job.variant, *layer)
            return codes, codes.nbytes
        return self._cache.get((job.url, tuple(layer), sha256), load)

    def drop(self, url: str, layers) -> None:
        layers = {tuple(layer) for layer in layers}
        self._cache.drop(lambda key: key[0] == url and key[1] in layers)

    def nbytes(self) -> int:
        return self._cache.nbytes


LAYERS = LayerCache()


@dataclass
class _PairCopy:
    state: PairState
    last: dict | None = None         # layer -> codes of the positions decided in state.round
    lock: threading.Lock = field(default_factory=threading.Lock)


class PairCache:
    """This worker's copy of the large pairs it works on, brought up to a round
    by applying the checkpointed deltas it has not seen (from the store)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pairs: dict = {}

    def synced(self, job: Job, pair: PairPlan, dep_shas: dict, series: str, upto: int,
               keep_last: bool) -> _PairCopy:
        key = (job.url, pair.key, series)  # series: this checkpoint series of the pair
        with self._lock:
            copy = self._pairs.get(key)
            if copy is None or copy.state.round > upto:  # unknown, or a restarted pair
                deps = {layer: LAYERS.get(job, layer, dep_shas.get(layer)) for layer in pair.deps}
                copy = _PairCopy(PairState(job.variant, pair.a, pair.b, deps, with_dtz=job.dtz))
                self._pairs[key] = copy
        with copy.lock:  # the first task of a round syncs; the others wait, then read
            store = job.store()
            while copy.state.round < upto:
                r = copy.state.round + 1
                marker = read_json(store, round_marker(pair.key, r))
                deltas = [Delta.from_bytes(store.read_bytes(name)) for name in marker["parts"]]
                copy.state.apply(deltas)
                copy.state.round = r
                copy.last = _last_decisions(deltas, pair) if (keep_last and r == upto) else None
            if keep_last and copy.last is None and upto >= 0:
                marker = read_json(store, round_marker(pair.key, upto))
                copy.last = _last_decisions(
                    [Delta.from_bytes(store.read_bytes(name)) for name in marker["parts"]], pair)
        return copy

    def drop(self, url: str, pair_key: str) -> None:
        with self._lock:
            for key in [k for k in self._pairs if k[:2] == (url, pair_key)]:
                del self._pairs[key]

    def nbytes(self) -> int:
        with self._lock:
            return sum(c.nbytes for p in self._pairs.values() for c in p.state.codes.values())


def _last_decisions(deltas, pair: PairPlan) -> dict:
    """Per layer of the pair, the codes of the positions decided in one round (the
    union of its chunks' deltas, which may repeat a decision)."""
    last = {layer: kernels.new_codes(pair.layer_size) for layer in pair.layers}
    for delta in deltas:
        delta.apply(last[delta.layer])
    return last


PAIRS = PairCache()


# -- small pairs: one task solves, one task per layer publishes --------------------
def solve_pair_task(job: Job, pair: PairPlan, dep_shas: dict, *dep_entries) -> dict:
    """Solve a pair whole, write its layer files to staging; return their entries.

    dep_entries are the results of the dependency layers' publish tasks (so the
    graph shows the dependency); dep_shas covers layers published before.
    """
    shas = dict(dep_shas)
    for entry in dep_entries:
        shas[(entry["k1"], entry["k2"])] = entry["sha256"]["win"]
    deps = {layer: LAYERS.get(job, layer, shas.get(layer)) for layer in pair.deps}
    result = solve_pair(job.variant, pair.a, pair.b, deps, method=job.method, with_dtz=job.dtz)
    store = job.store()
    entries = {}
    for k1, k2 in pair.layers:
        start = time.perf_counter()
        win, draw, counts = encode_layer(result.codes[(k1, k2)], pair.layer_size)
        outputs = {"win": win, "draw": draw}
        max_dtz = None
        if job.dtz:
            max_dtz = int(result.dtz[(k1, k2)].max())
            outputs["dtz"] = encode_distances(result.dtz[(k1, k2)], distance_width(max_dtz))
        files, checksums = write_layer_files(store, (k1, k2), outputs, staged)
        entries[(k1, k2)] = layer_entry(
            pair, (k1, k2), files, checksums, counts, result.rounds, result.evaluations, job.method,
            result.seconds, time.perf_counter() - start, max_dtz)
    return entries


def layer_entry(pair, layer, files, checksums, counts, rounds, evaluations, method, solve_s, publish_s,
                max_dtz=None) -> dict:
    wins, draws, losses = counts
    entry = {
        "k1": layer[0], "k2": layer[1], "pair": pair.key, "positions": pair.layer_size,
        "bytes": {kind: size for kind, (size, _) in files.items()},
        "sha256": {kind: digest for kind, (_, digest) in files.items()},
        "checksums": checksums,     # the sidecar of every frame's checksum (checksums.py)
        "counts": {"win": int(wins), "draw": int(draws), "loss": int(losses)},
        "rounds": rounds, "evaluations": int(evaluations), "method": method,
        "solve_seconds": round(solve_s, 3), "publish_seconds": round(publish_s, 3),
    }
    if max_dtz is not None:
        # DRAW positions store 0; the width says how to read the table.
        entry["dtz"] = {"max": int(max_dtz), "bytes_per_position": distance_width(max_dtz)}
    return entry


def publish_layer_task(job: Job, layer: tuple, pair_entries: dict) -> dict:
    """Move a layer's staged files into place (each appears whole); the driver
    writes the manifest entry afterwards."""
    k1, k2 = layer
    store = job.store()
    entry = pair_entries[layer]
    for name in [layer_file_name(k1, k2, kind) for kind in entry["bytes"]] + [sums_name(k1, k2)]:
        store.move(staged(name), name)   # the sidecar last: a file is never checked by a stale one
    return entry


# -- large pairs: rounds of chunk tasks -----------------------------------------------
def delta_name(pair_key: str, round_: int, layer: tuple, chunk: int) -> str:
    return f"{round_prefix(pair_key, round_)}/{layer[0]}_{layer[1]}-{chunk:05d}.delta"


def round_chunk_task(job: Job, pair: PairPlan, dep_shas: dict, series: str, round_: int,
                     mode: str, layer: tuple, chunk: int, lo: int, hi: int) -> dict:
    """Round `round_` for ranks [lo, hi) of `layer`: a sweep evaluates them; a
    frontier round takes the ones decided last round and re-evaluates their
    predecessors in the partner layer. The decisions become a checkpoint file."""
    start = time.perf_counter()
    copy = PAIRS.synced(job, pair, dep_shas, series, round_ - 1, keep_last=(mode == FRONTIER))
    counts = {}
    if mode == FRONTIER:
        delta = copy.state.frontier(layer, copy.last[layer], lo, hi, round_)
        # Chunks may decide the same position twice in a frontier round; the union
        # built while syncing gives the previous round's exact count.
        counts["previous_exact"] = sum(
            int(sum(kernels.count_codes(c, pair.layer_size)[:2])) for c in copy.last.values())
    else:
        delta = copy.state.sweep(layer, lo, hi, round_)
        counts["undecided_before"] = delta.evaluations  # exact: chunks are disjoint
    if delta.decided * 16 < delta.hi - delta.lo:
        delta = delta.sparse()  # a sparse checkpoint is smaller to write and to read
    name = delta_name(pair.key, round_, layer, chunk)
    job.store().write_bytes(name, delta.to_bytes())
    return {"name": name, "wins": delta.wins, "losses": delta.losses,
            "evaluations": delta.evaluations, "seconds": time.perf_counter() - start, **counts}


def publish_part_name(pair_key: str, layer: tuple, kind: str, group: int) -> str:
    return f"{pair_prefix(pair_key)}/publish/{layer_file_name(*layer, kind)}.part-{group:05d}"


def publish_part_task(job: Job, pair: PairPlan, dep_shas: dict, series: str, final_round: int,
                      layer: tuple, table: str, group: int, first_block: int, end_block: int,
                      width: int = 1) -> dict:
    """Compress blocks [first_block, end_block) of one of a solved layer's files and
    write the frames, concatenated, as part files: table "bits" gives the win and
    draw files' blocks, table "dtz" the distance file's (`width` bytes a position)."""
    copy = PAIRS.synced(job, pair, dep_shas, series, final_round, keep_last=False)
    npos = pair.layer_size
    nbytes = (end_block - first_block) * fmt.BLOCK_BYTES
    result = {"table": table, "group": group, "sizes": {}}
    if table == "bits":
        codes = copy.state.codes[layer]
        w0 = first_block * WORDS_PER_BLOCK
        w1 = min(end_block * WORDS_PER_BLOCK, kernels.code_words(npos))
        win = np.zeros(nbytes, np.uint8)
        draw = np.zeros(nbytes, np.uint8)
        counts = kernels.codes_to_bitsets(codes[w0:w1], npos, w0, win.view(np.uint32)[: w1 - w0],
                                          draw.view(np.uint32)[: w1 - w0])
        result["counts"] = [int(c) for c in counts]
        blocks = {"win": win, "draw": draw}
    else:
        first = first_block * fmt.BLOCK_BYTES // width
        dtz = copy.state.distances(layer)[first:first + nbytes // width]
        raw = np.zeros(nbytes, np.uint8)
        data = distance_bytes(dtz, width)
        raw[: data.shape[0]] = data
        result["max"] = int(dtz.max()) if dtz.shape[0] else 0
        blocks = {"dtz": raw}
    store = job.store()
    for kind, raw in blocks.items():
        frames = [fmt.compress_block(raw[i:i + fmt.BLOCK_BYTES]) for i in range(0, nbytes, fmt.BLOCK_BYTES)]
        store.write_bytes(publish_part_name(pair.key, layer, kind, group), b"".join(frames))
        result["sizes"][kind] = [len(f) for f in frames]
    return result


def assemble_layer_task(job: Job, pair: PairPlan, layer: tuple, parts: list, rounds: int,
                        evaluations: int, solve_seconds: float) -> dict:
    """Build a layer's files from the compressed parts (no decompression) and put
    each in place whole; returns the manifest entry."""
    start = time.perf_counter()
    store = job.store()
    parts = sorted(parts, key=lambda p: p["group"])
    outputs = {}
    for kind in ("win", "draw", "dtz"):
        frames = []
        for part in parts:
            if kind not in part["sizes"]:
                continue
            data = store.read_bytes(publish_part_name(pair.key, layer, kind, part["group"]))
            offset = 0
            for size in part["sizes"][kind]:
                frames.append(data[offset:offset + size])
                offset += size
        if frames:
            outputs[kind] = fmt.build_file(frames)
    files, checksums = write_layer_files(store, layer, outputs)
    counts = np.sum([p["counts"] for p in parts if p["table"] == "bits"], axis=0)
    dtz_parts = [p["max"] for p in parts if p["table"] == "dtz"]
    return layer_entry(pair, layer, files, checksums, counts, rounds, evaluations, job.method,
                       solve_seconds, time.perf_counter() - start,
                       max(dtz_parts) if dtz_parts else None)


# -- upkeep ----------------------------------------------------------------------------
def check_layer_task(job: Job, layer: tuple, entry: dict) -> dict | None:
    """A published layer's manifest entry if its files are intact (the recorded sizes
    and sha256, its checksum sidecar too), else None. A layer published before
    sidecars existed gets one here, from the files just matched against the
    manifest, and the entry returned records it."""
    store = job.store()
    if job.dtz and "dtz" not in entry["bytes"]:
        return None  # published without the distance table this run asks for
    data = {}
    for kind in entry["bytes"]:
        name = layer_file_name(*layer, kind)
        if not store.exists(name) or store.size(name) != entry["bytes"][kind]:
            return None
        data[kind] = store.read_bytes(name)
        if hashlib.sha256(data[kind]).hexdigest() != entry["sha256"][kind]:
            return None
    record = entry.get("checksums")
    if not record:
        sums = LayerSums(tuple(layer), {kind: FileSums.of_file(raw, layer_file_name(*layer, kind))
                                        for kind, raw in data.items()})
        sidecar = sums.to_bytes()
        store.write_bytes(sums_name(*layer), sidecar)
        return {**entry, "checksums": manifest_record(sums, sidecar)}
    sidecar = store.read_optional(record["file"])
    if sidecar is None or hashlib.sha256(sidecar).hexdigest() != record["sha256"]:
        return None
    return entry


def drop_from_caches(url: str, pair_key: str | None = None, layers=()) -> int:
    """Run on every worker when a pair is done: free its copy and unneeded layers."""
    if pair_key:
        PAIRS.drop(url, pair_key)
    LAYERS.drop(url, layers)
    return LAYERS.nbytes() + PAIRS.nbytes()


def peak_rss_bytes() -> int:
    """This process's peak resident memory (run on each worker at the end)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def warm_up(pits: int = 5) -> float:
    """Compile (or load from numba's cache) every kernel for this board size before
    real work starts, so no task pays compile time in its hot path; returns the
    seconds it took."""
    start = time.perf_counter()
    variant = Variant(stones=8, pits=pits)
    solved: dict = {}
    for m in range(2 * (variant.win_kazan - 2), -1, -2):
        for a in variant.kazans:
            b = m - a
            if a <= b and b in variant.kazans:
                for method in ("sweep", "frontier"):
                    result = solve_pair(variant, a, b, solved, method=method)
                solved.update(result.codes)
    for layer, codes in solved.items():
        encode_layer(codes, variant.layer_size(*layer))
    # Tiny games may never reach a frontier round: compile that kernel directly.
    state = PairState(variant, 0, 0, solved)
    fresh = kernels.new_codes(state.size)
    kernels.set_code(fresh, 0, kernels.WIN)
    state.frontier((0, 0), fresh, 0, state.size, 0)
    chunk = kernels.new_codes(37)
    kernels.set_code(chunk, 5, kernels.WIN)
    delta = Delta((0, 0), 0, 3, 40, dense=chunk, wins=1)
    delta.apply(kernels.new_codes(64))
    delta.sparse().apply(kernels.new_codes(64))
    return time.perf_counter() - start
