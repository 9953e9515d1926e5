"""Turn a plan into Dask work and drive it to a published tablebase.

The graph has the layers as nodes. A small pair (each layer within one chunk)
is one task, `pair-<a>-<b>`, taking the publish tasks of the layers its
captures reach as arguments, followed by one publish task per layer,
`layer-<k1>-<k2>`. A large pair runs as rounds of chunk tasks spread over all
workers (`pair-<a>-<b>/round-<r>/chunk-<c>`), each round checkpointed in the
store before the next starts, then its blocks are compressed by the workers
and each layer file is assembled (`layer-<k1>-<k2>`). The driver holds only
manifest entries and round counts, never layer data.

Running the same solve again resumes: published layers whose files match the
manifest are kept, and a large pair continues after its last complete round.
"""
from __future__ import annotations

import queue
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from distributed import Client

from . import format as fmt
from .errors import BestemsheError
from .lease import Lease
from .pair import SWEEP, choose_mode, chunk_ranges
from .plan import PairPlan, Plan, layer_key
from .progress import Progress
from .tables import distance_width
from .store import PRIVATE, SOLVE_RECORD, completed_rounds, manifest_key, pair_prefix, read_json, round_marker, write_json
from .tasks import (Job, assemble_layer_task, check_layer_task, drop_from_caches, publish_layer_task,
                    peak_rss_bytes, publish_part_task, round_chunk_task, solve_pair_task, warm_up)

# Two 4 MiB blocks of positions: chunks align with blocks, so each chunk's output
# compresses on its own; large enough that a round's fixed costs stay small.
DEFAULT_CHUNK_SIZE = 2 * fmt.BLOCK_BITS


@dataclass
class SolveSummary:
    layers_solved: int
    layers_skipped: int
    positions: int
    seconds: float
    compile_seconds: float
    worker_peak_rss: dict


def undecided_after(positions: int, markers: list) -> int:
    """Undecided positions of a pair after its checkpointed rounds. Frontier rounds
    may count a position twice (two chunks decide it); each later round's marker
    carries the exact figure for the round before, which corrects the drift."""
    undecided, reported = positions, 0
    for marker in markers:
        if "undecided_before" in marker:
            undecided = marker["undecided_before"]
        elif "previous_exact" in marker:
            undecided += reported - marker["previous_exact"]
        reported = marker["decided"]
        undecided -= reported
    return max(undecided, 0)


class _Stopped(Exception):
    """The solve is being abandoned (another part failed)."""


class Driver:
    def __init__(self, client: Client, job: Job, plan: Plan, log, chunk_size: int,
                 progress: Progress | None = None):
        if chunk_size < 1:
            raise BestemsheError("--chunk-size must be at least 1 position.")
        self.client = client
        self.job = job
        self.plan = plan
        self.log = log
        self.progress = progress or Progress()  # structured reports (progress.py)
        self.chunk_size = chunk_size
        self.store = job.store()
        self.events: queue.Queue = queue.Queue()
        self.stop = threading.Event()
        self.manifest: dict = {}
        self.finished: dict = {}      # layer -> manifest entry (published)
        self.layer_futures: dict = {}  # layer -> Dask future of its publish task
        self.round_futures: set = set()  # chunk tasks of rounds in flight (pair threads)
        self.round_lock = threading.Lock()

    # -- helpers --------------------------------------------------------------------
    def small(self, pair: PairPlan) -> bool:
        return pair.layer_size <= self.chunk_size

    def dep_shas(self, pair: PairPlan) -> dict:
        return {d: self.finished[d]["sha256"]["win"] for d in pair.deps if d in self.finished}

    def _watch(self, future, kind: str) -> None:
        future.add_done_callback(lambda f: self.events.put((kind, f)))

    # -- resume -------------------------------------------------------------------------
    def published(self) -> dict:
        """Layers of the plan already published and intact (checked on the workers)."""
        candidates = {}
        for layer in self.plan.layers:
            entry = self.manifest["layers"].get(manifest_key(*layer))
            if entry is not None:
                candidates[layer] = entry
        futures = {layer: self.client.submit(check_layer_task, self.job, layer, entry,
                                             key=f"check-{layer[0]}-{layer[1]}", pure=False)
                   for layer, entry in candidates.items()}
        intact = {layer: entry for layer, entry in
                  zip(futures, self.client.gather(list(futures.values()))) if entry}
        for layer in set(candidates) - set(intact):
            self.log(f"layer {layer[0]}_{layer[1]} does not match the manifest: solving it again")
            del self.manifest["layers"][manifest_key(*layer)]
        upgraded = [layer for layer in intact if intact[layer] != candidates[layer]]
        if upgraded:  # checksums written for layers published without them
            for layer in upgraded:
                self.manifest["layers"][manifest_key(*layer)] = intact[layer]
            self.store.write_manifest(self.manifest)
        return intact

    # -- a small pair: two static steps ------------------------------------------------
    def submit_small(self, pair: PairPlan) -> None:
        dep_futures = [self.layer_futures[d] for d in pair.deps if d in self.layer_futures]
        solved = self.client.submit(solve_pair_task, self.job, pair, self.dep_shas(pair), *dep_futures,
                                    key=pair.key, pure=False, retries=2)
        for layer in pair.layers:
            future = self.client.submit(publish_layer_task, self.job, layer, solved,
                                        key=layer_key(*layer), pure=False, retries=2)
            self.layer_futures[layer] = future
            self._watch(future, "layer")

    # -- a large pair: rounds driven from a thread ----------------------------------------
    def run_large(self, pair: PairPlan) -> dict:
        """Rounds to the fixpoint, then publication; returns {layer: future}."""
        store, client = self.store, self.client
        dep_shas = self.dep_shas(pair)
        series_name = f"{pair_prefix(pair.key)}/series.json"
        markers = completed_rounds(store, pair.key)
        if markers and store.exists(series_name):
            series = read_json(store, series_name)["series"]
            self.log(f"{pair.key}: resuming after round {len(markers) - 1}")
        else:
            store.remove(pair_prefix(pair.key))
            markers = []
            series = uuid.uuid4().hex
            write_json(store, series_name, {"series": series})
        chunks = [(layer, c, lo, hi) for layer in pair.layers
                  for c, (lo, hi) in enumerate(chunk_ranges(pair.layer_size, self.chunk_size))]
        undecided = undecided_after(pair.positions, markers)
        evaluations = sum(m["evaluations"] for m in markers)
        seconds = sum(m["seconds"] for m in markers)
        round_ = len(markers)
        last_decided = markers[-1]["decided"] if markers else None
        while last_decided != 0:
            if self.stop.is_set():
                raise _Stopped()
            mode = choose_mode(self.job.method, round_, last_decided or 0, undecided, pair.positions)
            start = time.perf_counter()
            futures = [client.submit(round_chunk_task, self.job, pair, dep_shas, series, round_, mode,
                                     layer, c, lo, hi, key=f"{pair.key}/round-{round_}/chunk-{i}",
                                     pure=False, retries=3)
                       for i, (layer, c, lo, hi) in enumerate(chunks)]
            with self.round_lock:
                self.round_futures.update(futures)
            try:
                results = client.gather(futures)
            finally:
                with self.round_lock:
                    self.round_futures.difference_update(futures)
            last_decided = sum(r["wins"] + r["losses"] for r in results)
            marker = {"round": round_, "mode": mode, "parts": [r["name"] for r in results],
                      "decided": last_decided, "evaluations": sum(r["evaluations"] for r in results),
                      "seconds": time.perf_counter() - start}
            if mode == SWEEP:
                marker["undecided_before"] = sum(r["undecided_before"] for r in results)
            else:
                marker["previous_exact"] = max(r["previous_exact"] for r in results)
            write_json(store, round_marker(pair.key, round_), marker)  # the checkpoint is complete
            markers.append(marker)
            undecided = undecided_after(pair.positions, markers)
            evaluations += marker["evaluations"]
            seconds += marker["seconds"]
            self.log(f"{pair.key} round {round_} ({mode}, {len(chunks)} chunks): "
                     f"{last_decided:,} decided, about {undecided:,} left, {marker['seconds']:.2f}s")
            self.progress.round_done(pair.key, round_, mode, last_decided, undecided, marker["seconds"])
            round_ += 1
        self.log(f"{pair.key}: publishing after {round_} rounds")
        final = round_ - 1
        group = max(1, self.chunk_size // fmt.BLOCK_BITS)
        tables = [("bits", fmt.blocks_for_bits(pair.layer_size), 1)]
        if self.job.dtz:
            width = distance_width(round_)  # no distance exceeds the number of rounds
            tables.append(("dtz", fmt.blocks_for_bits(8 * width * pair.layer_size), width))
        layer_futures = {}
        for layer in pair.layers:
            parts = [client.submit(publish_part_task, self.job, pair, dep_shas, series, final, layer,
                                   table, g, b, min(b + group, blocks), width,
                                   key=f"{pair.key}/publish-{layer[0]}-{layer[1]}/{table}-{g}",
                                   pure=False, retries=3)
                     for table, blocks, width in tables
                     for g, b in enumerate(range(0, blocks, group))]
            layer_futures[layer] = client.submit(assemble_layer_task, self.job, pair, layer, parts,
                                                 round_, evaluations, seconds,
                                                 key=layer_key(*layer), pure=False, retries=3)
        return layer_futures

    # -- the main loop ----------------------------------------------------------------------
    def launch_ready(self, pending: list, pool: ThreadPoolExecutor) -> None:
        for pair in list(pending):
            if self.small(pair):
                if not all(d in self.finished or d in self.layer_futures for d in pair.deps):
                    continue
                self.submit_small(pair)
            else:
                if not all(d in self.finished for d in pair.deps):
                    continue  # its chunk tasks read the dependency layers from the store
                future = pool.submit(self.run_large, pair)
                future.add_done_callback(lambda f: self.events.put(("large", f)))
            pending.remove(pair)

    def run(self) -> SolveSummary:
        start = time.perf_counter()
        self.manifest = self.store.open_manifest(self.job.variant)
        self.store.write_manifest(self.manifest)  # fail early, before solving, if unwritable
        compile_times = self.client.run(warm_up, self.job.variant.pits)
        compile_seconds = max(compile_times.values()) if compile_times else 0.0
        self.log(f"kernels ready on {len(compile_times)} workers in {compile_seconds:.1f}s")
        self.finished = self.published()
        skipped = len(self.finished)
        if skipped:
            self.log(f"{skipped} layers already published, skipped")
        pending = [p for p in self.plan.pairs if not all(l in self.finished for l in p.layers)]
        todo = {layer for p in pending for layer in p.layers}
        write_json(self.store, SOLVE_RECORD, {"min_captured": self.plan.min_captured,
                                              "chunk_size": self.chunk_size, "method": self.job.method,
                                              "dtz": self.job.dtz, "started": time.time()})
        self.progress.started(self.plan, dict(self.finished),
                              {p.key: len(p.layers) * len(chunk_ranges(p.layer_size, self.chunk_size))
                               for p in pending if not self.small(p)})
        positions = 0
        pool = ThreadPoolExecutor(max_workers=max(1, len(pending)), thread_name_prefix="bestemshe-pair")
        try:
            self.launch_ready(pending, pool)
            while todo - set(self.finished):
                kind, future = self.events.get()
                if kind == "large":
                    for layer, f in future.result().items():
                        self.layer_futures[layer] = f
                        self._watch(f, "layer")
                else:
                    positions += self.record(future.result())
                self.launch_ready(pending, pool)
        except BaseException as exc:
            self.stop.set()
            self.progress.failed(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
            # Task keys are fixed (pair-a-b/round-r/chunk-c), so nothing of a failed
            # solve may outlive it on the cluster: a later solve there would get its
            # stale results. Cancel every task in flight and wait for the pair threads.
            with self.round_lock:
                in_flight = list(self.round_futures)
            self.client.cancel(list(self.layer_futures.values()) + in_flight)
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        peaks = self.client.run(peak_rss_bytes)
        summary = SolveSummary(len(todo), skipped, positions, time.perf_counter() - start,
                               compile_seconds, peaks)
        self.progress.finished(summary)
        return summary

    def record(self, entry: dict) -> int:
        layer = (entry["k1"], entry["k2"])
        self.manifest["layers"][manifest_key(*layer)] = entry
        self.store.write_manifest(self.manifest)  # after the layer's files: the entry comes last
        self.finished[layer] = entry
        c = entry["counts"]
        done = sum(1 for l in self.plan.layers if l in self.finished)
        self.log(f"layer {layer[0]}_{layer[1]} done ({done}/{len(self.plan.layers)}): "
                 f"{entry['positions']:,} positions, win {c['win']:,} draw {c['draw']:,} "
                 f"loss {c['loss']:,}, {entry['rounds']} rounds, {entry['solve_seconds']:.2f}s")
        self.progress.layer_done(entry)
        pair = self.plan.pair_of(layer)
        if all(l in self.finished for l in pair.layers):
            self.release(pair)
        return entry["positions"]

    def release(self, pair: PairPlan) -> None:
        """A pair is published: drop its checkpoints and what no pending pair needs."""
        if not self.small(pair):
            self.store.remove(pair_prefix(pair.key))
        needed = {d for p in self.plan.pairs if not all(l in self.finished for l in p.layers)
                  for d in p.deps}
        unneeded = [d for d in pair.deps if d not in needed]
        self.client.run(drop_from_caches, self.job.url, pair.key, unneeded)


def solve(client: Client, job: Job, plan: Plan, log=lambda line: None,
          chunk_size: int = DEFAULT_CHUNK_SIZE, restart: bool = False,
          progress: Progress | None = None) -> SolveSummary:
    store = job.store()
    store.ensure_root()
    with Lease(store):
        if restart:
            store.remove(f"{PRIVATE}/pairs")
            log("checkpoints discarded (--restart)")
        return Driver(client, job, plan, log, chunk_size, progress).run()
