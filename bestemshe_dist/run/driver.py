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

import asyncio
import hashlib
import itertools
import math
import queue
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Container, Iterable
from concurrent.futures import Future as PoolFuture
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from distributed import Client, Future

from ..data import format as fmt
from ..data.layer_files import distance_width
from ..data.lease import Lease
from ..data.store import bytes_read, completed_rounds, read_json, redact, write_json
from ..errors import BestemsheError, first_line
from ..game.dag import PairPlan, Plan
from ..game.geometry import partner
from ..naming import (
    PAIRS,
    SLOTS,
    SOLVE_RECORD,
    check_key,
    chunk_key,
    counted,
    flush_key,
    layer_key,
    layer_name,
    pair_prefix,
    parse_part,
    publish_part_key,
    round_key,
    round_marker,
    run_key,
    series_file,
    small_round_key,
)
from ..solve.pair import COUNTING, FRONTIER, SWEEP, choose_mode, chunk_ranges
from ..watch.progress import Progress, Tee
from ..watch.runlog import RunLog
from .hostmem import is_private, private_name, remove_spaces
from .memory import choose_method, gib, pair_memory, together
from .tasks import (
    Job,
    assemble_layer_task,
    check_layer_task,
    count_round_task,
    drop_from_caches,
    empty_round_array,
    end_of_run,
    flush_round_task,
    host_memory_bytes,
    host_memory_room,
    host_ram_bytes,
    host_tag,
    peak_rss_bytes,
    publish_layer_task,
    publish_part_task,
    round_chunk_task,
    running_keys,
    small_round_task,
    solve_pair_task,
    warm_up,
)

# How often the driver looks whether a flush's host still has workers while it waits.
HOST_POLL_SECONDS = 5.0
# How long a frontier round that failed waits for the tasks of its try still running
# (cancelled, they run on until they return) before it runs again.
FENCE_SECONDS = 600.0
# A frontier round whose sources (the last round's decisions) are at most this many,
# and at most a 64th of a chunk (smaller than any chunk task), runs as one task:
# pair 8-12's rounds of 100,000-500,000 sources take 0.1-0.3 s of work in one
# thread, and spread over tasks paid about 0.2 s of waits on the cluster.
SMALL_ROUND_SOURCES = 1 << 19
# Dask priorities (higher runs first among ready tasks), by kind, then by the pair's
# place on the DAG's critical path (Driver.priority). Tasks a whole round waits on
# (counting rounds, flushes, small rounds) go first: they are short, and without it
# they queued behind other pairs' long chunk tasks (in the --min-captured 20 solve,
# pair 10-12's last 70 rounds took 456 s so). Publication goes last: it is only
# compression, and no round should wait on it.
PUBLISH, SOLVE, BARRIER = 0, 1, 2
# A pair's cost on the critical path, in positions, beyond its own positions: the
# latency of its rounds one after another (a large pair's tail is dozens of rounds
# of a few hundred decisions; ~0.02-0.05 s each by counting).
PAIR_LATENCY_POSITIONS = 1 << 20

# Two 4 MiB blocks of positions: chunks align with blocks, so each chunk's output
# compresses on its own; large enough that a round's fixed costs stay small.
DEFAULT_CHUNK_SIZE = 2 * fmt.BLOCK_BITS
# A frontier round splits its chunks' sources into about this many tasks per
# worker thread, weighted by the sources each chunk holds, so that a round keeps
# every thread of a cluster busy however few chunks the pair has (pair 8-12 has 4
# a layer: with a task per chunk, 16 hosts x 32 threads would leave 508 idle).
# On this 2-core machine it changes nothing measurable (pair 8-12's frontier
# rounds: 93.9 s without, 94.3 s with). A piece is never smaller than MIN_PIECE
# positions nor holds fewer than MIN_PIECE_SOURCES sources: each piece task
# decodes its whole chunk's sources (0.05-0.15 s for a chunk of 67M positions),
# about what re-evaluating 10^5 sources costs, so a tail round's few sources stay
# in one task per chunk.
PIECES_PER_THREAD = 4
MIN_PIECE = 1 << 16
MIN_PIECE_SOURCES = 1 << 17

# (layer, chunk, lo, hi): ranks [lo, hi) of a layer, the chunk's number in it
Chunk: TypeAlias = tuple[tuple[int, int], int, int, int]
# a chunk and its piece: None (the whole chunk) or (number, piece_lo, piece_hi)
ChunkTask: TypeAlias = tuple[tuple[int, int], int, int, int, tuple[int, int, int] | None]


@dataclass
class SolveSummary:
    layers_solved: int
    layers_skipped: int
    positions: int
    seconds: float
    compile_seconds: float
    worker_peak_rss: dict[str, int]
    host_memory_peak: int = 0  # bytes of shared arrays a host held at most (hostmem.py)


def undecided_after(positions: int, markers: list[dict[str, Any]]) -> int:
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


def round_hosts(results: list[dict[str, Any]], flushed: set[str]) -> dict[str, Any]:
    """Where a round ran (the round marker keeps it): the hosts of its tasks, those
    whose copy of the pair a task of it built, the earlier rounds each host
    brought its copy up to before them (read from the checkpoints there, once
    each), and the hosts that wrote its decisions out (a frontier round's flush)."""
    synced: dict[str, list[int]] = {}
    for r in results:
        synced.setdefault(r["host"], []).extend(int(k) for k in r["exact"])
    return {
        "ran": sorted(synced),
        "built": sorted({r["host"] for r in results if r.get("built")}),
        "synced": {host: sorted(rounds) for host, rounds in sorted(synced.items()) if rounds},
        "flushed": sorted(flushed),
    }


class _RedoRound(Exception):
    """A round's decisions were lost with a host: run the round again."""


def worker_info(client: Client) -> dict[str, dict[str, Any]]:
    """Every worker's record at the scheduler (host, threads, memory limit), asked
    for now. Client.scheduler_info() returns a cache that the client's own
    periodic refresh replaces with one holding no workers, so it could read as
    an empty cluster in the middle of a solve."""
    scheduler = client.scheduler
    assert scheduler is not None  # a connected client
    workers: dict[str, dict[str, Any]] = client.sync(scheduler.identity, n_workers=-1)["workers"]
    return workers


class ResultFetch:
    """A future's result, waited for a while at a time. Future.result(timeout=T)
    cancels its fetch when T runs out, and a fetch cancelled while it waits on the
    client's shared gather cancels that gather with it: every later gather of the
    client then fails (distributed 2026.8: UnboundLocalError from utils.sync); a
    loaded machine makes that likely. Here the fetch is started once and
    shielded: a wait that runs out stops waiting on it, never the fetch."""

    def __init__(self, client: Client, future: Future[Any]):
        self.client = client
        self.future = future
        self.fetch: asyncio.Future[Any] | None = None

    async def _wait(self, timeout: float) -> Any:
        if self.fetch is None:
            # Future has no public coroutine for its result; _result is what
            # Future.result runs.
            self.fetch = asyncio.ensure_future(self.future._result())
            # A fetch left behind (its host gone) still has its end retrieved.
            self.fetch.add_done_callback(lambda done: done.cancelled() or done.exception())
        return await asyncio.wait_for(asyncio.shield(self.fetch), timeout)

    def wait(self, timeout: float) -> Any:
        """The result, or TimeoutError after `timeout` seconds (the fetch goes on);
        the future's own error if it failed or was cancelled."""
        return self.client.sync(self._wait, timeout)


def worker_slots(info: dict[str, Any]) -> int:
    """The threads a worker gives the solve's work: its SLOTS where it has them
    (the one thread more is for round barriers), else its threads."""
    return int(info.get("resources", {}).get(SLOTS, info.get("nthreads", 1)))


class Driver:
    def __init__(
        self,
        client: Client,
        job: Job,
        plan: Plan,
        log: Callable[[str], object],
        chunk_size: int,
        progress: Progress | None = None,
        stop_after_rounds: int | None = None,
    ) -> None:
        if chunk_size < 1:
            raise BestemsheError("--chunk-size must be at least 1 position.")
        self.client = client
        self.job = job
        self.plan = plan
        self._log = log
        self.progress = progress or Progress()  # structured reports (progress.py)
        self.chunk_size = chunk_size
        self.store = job.store()
        # ("layer", its task's future) or ("large", (pair key, its thread's future))
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.stop = threading.Event()
        self.manifest: dict[str, Any] = {}
        self.finished: dict[tuple[int, int], dict[str, Any]] = {}  # layer -> manifest entry (published)
        self.layer_futures: dict[tuple[int, int], Future[dict[str, Any]]] = {}  # layer -> its publish task
        self.round_futures: set[Future[Any]] = set()  # chunk tasks of rounds in flight (pair threads)
        # Every task key ends with this run's tag. Dask takes a key it already holds
        # for the same result, and cancelling is asynchronous: a solve right after a
        # failed one on the same cluster, with the same keys, could be handed that
        # solve's tasks (writing into its output). Verify's keys do the same.
        self.run_tag = uuid.uuid4().hex[:8]
        self.round_lock = threading.Lock()
        self.in_flight: dict[str, PairPlan] = {}  # large pairs running: key -> PairPlan
        self.methods: dict[str, str] = {}  # large pair -> how it is solved (method_for)
        self.count_hosts: dict[str, str] = {}  # counting pair -> the memory domain holding it
        self.found_markers: dict[str, list[dict[str, Any]]] = {}  # pair -> markers an earlier run left
        self.host_memory_peak = 0
        self.reads: dict[str, int] = {}  # worker -> bytes read from stores, at the last look
        self.stop_after_rounds = stop_after_rounds
        # Pairs ranked by the longest chain of pairs still to run from them (1 = the
        # shortest): the critical path's pairs get their tasks run first.
        paths = plan.remaining_paths(lambda p: p.positions + PAIR_LATENCY_POSITIONS)
        self.urgency = {key: n for n, key in enumerate(sorted(paths, key=lambda k: (paths[k], k)), 1)}
        self.slotted: bool | None = None  # whether tasks take SLOTS (placement)
        # solve --synthetic-deps: one pair, dependency layers made on the workers
        self.synthetic = job.synthetic is not None
        self.synthetic_record = (
            {"seed": job.synthetic, "pairs": [p.key for p in plan.pairs]} if self.synthetic else None
        )

    # -- helpers --------------------------------------------------------------------
    def log(self, line: str) -> None:
        """A line of the solve's own, unless it is being abandoned: after Ctrl-C (or a
        failure) the pair threads still wind down, and what they meet then (cancelled
        tasks) is no news; the one line the CLI prints then is the only one."""
        if not self.stop.is_set():
            self._log(line)

    def small(self, pair: PairPlan) -> bool:
        # A synthetic run always takes the chunked path it exists to measure.
        return pair.layer_size <= self.chunk_size and not self.synthetic

    def priority(self, pair: PairPlan, kind: int) -> int:
        """The Dask priority of a task of `pair` of `kind` (PUBLISH, SOLVE, BARRIER)."""
        return kind * (len(self.urgency) + 1) + self.urgency[pair.key]

    def placement(self, pair: PairPlan, kind: int) -> dict[str, Any]:
        """A task's priority, and where every worker has SLOTS (a solve's local
        cluster), one slot for all but the barriers: those take the thread the
        workers keep beside their slots, so they never wait for a long task."""
        if self.slotted is None:
            workers = worker_info(self.client).values()
            self.slotted = bool(workers) and all(SLOTS in w.get("resources", {}) for w in workers)
        found: dict[str, Any] = {"priority": self.priority(pair, kind)}
        if kind != BARRIER and self.slotted:
            found["resources"] = {SLOTS: 1}
        return found

    def dep_shas(self, pair: PairPlan) -> dict[tuple[int, int], str]:
        return {d: self.finished[d]["sha256"]["win"] for d in pair.deps if d in self.finished}

    def _watch(self, future: Future[dict[str, Any]], kind: str) -> None:
        future.add_done_callback(lambda f: self.events.put((kind, f)))

    def task_key(self, name: str) -> str:
        """A task's key: its name (what the dashboard shows) and this run's tag."""
        return run_key(name, self.run_tag)

    # -- resume -------------------------------------------------------------------------
    def published(self) -> dict[tuple[int, int], dict[str, Any]]:
        """Layers of the plan already published and intact, and its inputs (checked on
        the workers)."""
        candidates: dict[tuple[int, int], dict[str, Any]] = {}
        for layer in self.plan.layers + self.inputs:
            entry = self.manifest["layers"].get(layer_name(*layer))
            if entry is not None:
                candidates[layer] = entry
        futures = {
            layer: self.client.submit(
                check_layer_task, self.job, layer, entry, key=self.task_key(check_key(*layer)), pure=False
            )
            for layer, entry in candidates.items()
        }
        intact = {
            layer: entry for layer, entry in zip(futures, self.client.gather(list(futures.values()))) if entry
        }
        for layer in set(candidates) - set(intact):
            self.log(f"layer {layer_name(*layer)} does not match the manifest: solving it again")
            del self.manifest["layers"][layer_name(*layer)]
        upgraded = [layer for layer in intact if intact[layer] != candidates[layer]]
        if upgraded:  # checksums written for layers published without them
            for layer in upgraded:
                self.manifest["layers"][layer_name(*layer)] = intact[layer]
            self.store.write_manifest(self.manifest)
        return intact

    def unpublished(self, pair: PairPlan) -> list[tuple[int, int]]:
        """The pair's layers to publish: a crash between its two layers leaves one
        published, which is counted once, as skipped, and never written again."""
        return [layer for layer in pair.layers if layer not in self.finished]

    # -- a small pair: two static steps ------------------------------------------------
    def submit_small(self, pair: PairPlan) -> None:
        dep_futures = [self.layer_futures[d] for d in pair.deps if d in self.layer_futures]
        solved = self.client.submit(
            solve_pair_task,
            self.job,
            pair,
            self.dep_shas(pair),
            *dep_futures,
            key=self.task_key(pair.key),
            **self.placement(pair, SOLVE),
            pure=False,
            retries=2,
        )
        for layer in self.unpublished(pair):
            future = self.client.submit(
                publish_layer_task,
                self.job,
                layer,
                solved,
                key=self.task_key(layer_key(*layer)),
                **self.placement(pair, PUBLISH),
                pure=False,
                retries=2,
            )
            self.layer_futures[layer] = future
            self._watch(future, "layer")

    # -- a large pair: rounds driven from a thread ----------------------------------------
    def run_large(self, pair: PairPlan) -> dict[tuple[int, int], Future[dict[str, Any]]]:
        """Rounds to the fixpoint, then publication; returns {layer: future}."""
        store, client = self.store, self.client
        dep_shas = self.dep_shas(pair)
        series_name = series_file(pair.key)
        # read once at the start of the run by report_resume; nothing wrote since
        markers = self.found_markers.pop(pair.key, None) or completed_rounds(store, pair.key)
        if markers and not all(parse_part(name) for m in markers for name in m["parts"]):
            self.log(f"{pair.key}: its checkpoints are of an older version of this tool; it starts over")
            markers = []
        if markers and store.exists(series_name):
            series = read_json(store, series_name)["series"]
            self.log(f"{pair.key}: resuming after round {len(markers) - 1}")
        else:
            store.remove(pair_prefix(pair.key))
            markers = []
            series = uuid.uuid4().hex
            write_json(store, series_name, {"series": series})
        ranges = chunk_ranges(pair.layer_size, self.chunk_size)
        chunks: list[Chunk] = [
            (layer, c, lo, hi) for layer in pair.layers for c, (lo, hi) in enumerate(ranges)
        ]
        undecided = undecided_after(pair.positions, markers)
        evaluations = sum(m["evaluations"] for m in markers)
        unmoves = sum(m.get("unmoves", 0) for m in markers)
        seconds = sum(m["seconds"] for m in markers)
        round_ = len(markers)
        last_decided = markers[-1]["decided"] if markers else None
        while last_decided != 0:
            if self.stop.is_set():
                raise _Stopped()
            if self.stop_after_rounds is not None and round_ >= self.stop_after_rounds:
                self.log(f"{pair.key}: stopped after {counted(round_, 'round')} (--stop-after-rounds)")
                return {}
            method = self.method_for(pair)
            mode = (
                COUNTING
                if method == COUNTING
                else choose_mode(method, round_, last_decided or 0, undecided, pair.positions)
            )
            start = time.perf_counter()
            previous = markers[-1]["parts"] if markers else []
            # decisions per part (absent from the checkpoints of older versions)
            weights = markers[-1].get("part_decided", {}) if markers else {}
            flush_seconds = 0.0
            flushed_on: set[str] = set()
            if mode == COUNTING:
                results = [self._count_round(pair, dep_shas, series, round_, previous, last_decided)]
                parts = results[0]["parts"]
            elif mode == SWEEP:
                results = self._round_tasks(pair, dep_shas, series, round_, mode, chunks, previous)
                parts = {r["name"]: r["wins"] + r["losses"] for r in results if r["name"]}
                flushed_on = {r["host"] for r in results if r["name"]}  # each task wrote its part
            elif is_small_round(last_decided or 0, self.chunk_size):
                results = [self._small_round(pair, dep_shas, series, round_, previous)]
                parts = results[0]["parts"]
                flushed_on = {results[0]["host"]} if parts else set()
            else:
                # One layer at a time: the sources in its partner decide it, in the
                # host's one round array, written out before the other layer's turn.
                results, parts = [], {}
                for target in pair.layers:
                    half = [c for c in chunks if c[0] == partner(target)]
                    done, found, flushed, wrote = self._frontier_half(
                        pair, dep_shas, series, round_, half, previous, target, weights
                    )
                    results += done
                    parts.update(found)
                    flush_seconds += flushed
                    flushed_on |= wrote
            last_decided = sum(parts.values())
            marker: dict[str, Any] = {
                "round": round_,
                "mode": mode,
                "parts": sorted(parts),
                "decided": last_decided,
                "part_decided": dict(sorted(parts.items())),
                "evaluations": sum(r["evaluations"] for r in results),
                "unmoves": sum(r.get("unmoves", 0) for r in results),
                "seconds": time.perf_counter() - start,
                "task_bytes": max((r.get("task_bytes", 0) for r in results), default=0),
                "task_seconds": task_seconds(results),
                "flush_seconds": round(flush_seconds, 3),
            }
            if mode == SWEEP:
                marker["undecided_before"] = sum(r["undecided_before"] for r in results)
            if mode != COUNTING:
                marker["hosts"] = round_hosts(results, flushed_on)
            exact = [r["exact"].get(round_ - 1) for r in results if r["exact"].get(round_ - 1) is not None]
            if exact and mode != SWEEP:
                marker["previous_exact"] = max(exact)
            if mode == COUNTING and results[0].get("rebuilt") is not None:
                marker["rebuilt_seconds"] = round(results[0]["rebuilt"], 3)
                marker["rebuilt_why"] = results[0]["rebuilt_why"]
                self.log(
                    f"{pair.key}: its states rebuilt on {results[0]['host']} from the checkpoints "
                    f"of rounds 0-{round_ - 1} in {results[0]['rebuilt']:.1f}s ({results[0]['rebuilt_why']})"
                )
                self.progress.rebuilt(pair.key, results[0]["rebuilt"])
            marker["store_bytes_read"] = self.store_reads()
            marker["checkpointed_at"] = round(time.time(), 3)  # what a resume redoes is counted from here
            write_json(store, round_marker(pair.key, round_), marker)  # the checkpoint is complete
            self.sample_host_memory()
            markers.append(marker)
            undecided = undecided_after(pair.positions, markers)
            evaluations += marker["evaluations"]
            unmoves += marker["unmoves"]
            seconds += marker["seconds"]
            self.log(
                f"{pair.key} round {round_} ({mode}, {counted(len(chunks), 'chunk')}, {counted(len(results), 'task')}): "
                f"{last_decided:,} decided, about {undecided:,} left, {marker['seconds']:.2f}s"
            )
            if not self.stop.is_set():
                self.progress.round_done(pair.key, round_, mode, last_decided, undecided, marker["seconds"])
            round_ += 1
        phases: Counter[str] = Counter()
        for m in markers:
            phases.update(m.get("task_seconds", {}))
        flushes = sum(m.get("flush_seconds", 0.0) for m in markers)
        detail = ", ".join(f"{phase} {seconds:.1f}" for phase, seconds in sorted(phases.items()))
        self.log(
            f"{pair.key}: publishing after {counted(round_, 'round')}"
            + (f"; its tasks' time: {detail} s; waited on flushes {flushes:.1f} s" if detail else "")
        )
        final = round_ - 1
        round_parts = [m["parts"] for m in markers]
        group = max(1, self.chunk_size // fmt.BLOCK_BITS)
        tables = [("bits", fmt.blocks_for_bits(pair.layer_size), 1, group)]
        if self.job.dtz:
            width = distance_width(round_)  # no distance exceeds the number of rounds
            # A distance part covers about a chunk of positions (each rebuilt from every
            # round's checkpoints of its range), so its working set is a chunk's.
            tables.append(
                (
                    "dtz",
                    fmt.blocks_for_bits(8 * width * pair.layer_size),
                    width,
                    max(1, self.chunk_size * width // fmt.BLOCK_BYTES),
                )
            )

        def checkpoints_of(
            layer: tuple[int, int], table: str, b: int, end: int, width: int
        ) -> list[list[str]] | None:
            """Every round's parts of `layer` that hold positions of blocks [b, end) of a
            distance file (what its part task reads; nothing for the bits)."""
            if table != "dtz":
                return None
            lo, hi = b * fmt.BLOCK_BYTES // width, end * fmt.BLOCK_BYTES // width
            return [
                [
                    name
                    for name in names
                    if _part_of(name)[0] == tuple(layer)
                    and ranges[_part_of(name)[1]][0] < hi
                    and ranges[_part_of(name)[1]][1] > lo
                ]
                for names in round_parts
            ]

        layer_futures: dict[tuple[int, int], Future[dict[str, Any]]] = {}
        for layer in self.unpublished(pair):
            part_futures = [
                client.submit(
                    publish_part_task,
                    self.job,
                    pair,
                    dep_shas,
                    series,
                    final,
                    layer,
                    table,
                    g,
                    b,
                    min(b + step, blocks),
                    width,
                    checkpoints_of(layer, table, b, min(b + step, blocks), width),
                    self.method_for(pair),
                    key=self.task_key(publish_part_key(pair.key, layer, table, g)),
                    **self.placement(pair, PUBLISH),
                    pure=False,
                    retries=3,
                    # A counting pair's values are in its host's states: read there
                    # (elsewhere they are rebuilt from the checkpoints).
                    **self._near_states(pair, table),
                )
                for table, blocks, width, step in tables
                for g, b in enumerate(range(0, blocks, step))
            ]
            layer_futures[layer] = client.submit(
                assemble_layer_task,
                self.job,
                pair,
                layer,
                part_futures,
                round_,
                evaluations,
                seconds,
                self.method_for(pair),
                unmoves,
                key=self.task_key(layer_key(*layer)),
                **self.placement(pair, PUBLISH),
                pure=False,
                retries=3,
            )
        return layer_futures

    def _near_states(self, pair: PairPlan, table: str) -> dict[str, Any]:
        host = self.count_hosts.get(pair.key)
        if table != "bits" or host is None:
            return {}
        return {"workers": [host], "allow_other_workers": True}

    def _count_round(
        self,
        pair: PairPlan,
        dep_shas: dict[tuple[int, int], str],
        series: str,
        round_: int,
        previous: list[str],
        sources: int | None,
    ) -> dict[str, Any]:
        """A counting round, one task on the host holding the pair's states
        (hostcount.py). If that host is lost, another takes the pair (rebuilding
        its states from the checkpoints) and runs the round again. A round of few
        `sources` (the last round's decisions) is a barrier: it takes the thread
        each worker keeps beside its slots, and so never waits behind a long task.
        A large one takes a slot like other solving work: were it a barrier too,
        the other pairs' tail rounds would queue behind it for that thread (in the
        solve of k1 + k2 >= 16, rounds of 200 decisions took 11-14 s so)."""
        kind = BARRIER if sources is not None and is_small_round(sources, self.chunk_size) else SOLVE
        for attempt in range(1, 4):
            threads = self.domain_threads()
            if not threads:
                raise BestemsheError(
                    f"{pair.key} round {round_}: the cluster has no worker left; "
                    "check it and run the solve again to resume."
                )
            host = self.count_hosts.get(pair.key)
            if host not in threads:
                # The host with the most threads free of other counting pairs.
                busy = Counter(self.count_hosts.values())
                host = max(sorted(threads), key=lambda h: threads[h] - busy[h] * 0.5)
                self.count_hosts[pair.key] = host
            future = self.client.submit(
                count_round_task,
                self.job,
                pair,
                dep_shas,
                series,
                round_,
                self.chunk_size,
                previous,
                threads[host],
                key=self.task_key(chunk_key(pair.key, round_, 0, attempt=attempt)),
                workers=[host],
                allow_other_workers=False,
                **self.placement(pair, kind),
                pure=False,
                retries=2,
            )
            with self.round_lock:
                self.round_futures.add(future)
            try:
                return self._wait_on_host(future, host)
            except Exception as exc:
                if self.stop.is_set():
                    raise _Stopped() from None
                if host in self.memory_domains():
                    raise
                why = first_line(exc)[:80]
                self.log(
                    f"{pair.key} round {round_}: {why}; running it again elsewhere (attempt {attempt + 1})"
                )
                self.count_hosts.pop(pair.key, None)
            finally:
                with self.round_lock:
                    self.round_futures.discard(future)
        raise BestemsheError(
            f"{pair.key} round {round_} lost its host three times; "
            "check the cluster and run the solve again to resume."
        )

    def _small_round(
        self,
        pair: PairPlan,
        dep_shas: dict[tuple[int, int], str],
        series: str,
        round_: int,
        previous: list[str],
    ) -> dict[str, Any]:
        """A frontier round with few sources, in one task (tasks.small_round_task);
        it goes before other pairs' queued tasks, as flushes do: a pair's tail is
        dozens of rounds in a row, each waiting on the last."""
        future = self.client.submit(
            small_round_task,
            self.job,
            pair,
            dep_shas,
            series,
            round_,
            self.chunk_size,
            previous,
            key=self.task_key(small_round_key(pair.key, round_)),
            **self.placement(pair, BARRIER),
            pure=False,
            retries=3,
        )
        with self.round_lock:
            self.round_futures.add(future)
        try:
            return future.result()
        finally:
            with self.round_lock:
                self.round_futures.discard(future)

    def _frontier_half(
        self,
        pair: PairPlan,
        dep_shas: dict[tuple[int, int], str],
        series: str,
        round_: int,
        chunks: list[Chunk],
        previous: list[str],
        target: tuple[int, int],
        weights: dict[str, int],
    ) -> tuple[list[dict[str, Any]], dict[str, int], float, set[str]]:
        """The frontier tasks deciding layer `target`, then the flush of their
        decisions; again if a host lost them on the way. Returns (results, parts,
        the flush's seconds, the hosts that wrote parts)."""
        for attempt in range(1, 4):
            results = self._round_tasks(
                pair, dep_shas, series, round_, FRONTIER, chunks, previous, weights, attempt
            )
            start = time.perf_counter()
            try:
                parts, wrote = self._flush(pair, dep_shas, series, round_, results, target, attempt)
                return results, parts, time.perf_counter() - start, wrote
            except _RedoRound as why:
                if self.stop.is_set():  # cancelled by the stop itself: nothing to run again
                    raise _Stopped() from None
                self.log(f"{pair.key} round {round_}: {why}; running it again (attempt {attempt + 1})")
                self._fence(pair, round_)
        raise BestemsheError(
            f"{pair.key} round {round_} lost its workers three times; "
            "check the cluster and run the solve again to resume."
        )

    def _fence(self, pair: PairPlan, round_: int) -> None:
        """Before a frontier round runs again: no task of its failed try may still be
        running anywhere (a flush running on would take the new try's decisions out
        of its ranges, a chunk task would add the old try's), and the hosts' round
        arrays start empty. A host cut off keeps its round array: it never flushes
        for this round again (its flush tasks went with it)."""
        prefixes = (f"{round_key(pair.key, round_)}/", f"{round_key(pair.key, round_)}.try")
        deadline = time.monotonic() + FENCE_SECONDS
        while True:
            running = self.client.run(running_keys, on_error="return")
            if not any(
                key.startswith(prefixes)
                for keys in running.values()
                if isinstance(keys, list)
                for key in keys
            ):
                break
            if time.monotonic() > deadline:
                raise BestemsheError(
                    f"{pair.key} round {round_}: tasks of a failed try still run after "
                    f"{FENCE_SECONDS:.0f} s; check the cluster and run the solve again to resume."
                )
            time.sleep(0.05)
        self.client.run(empty_round_array, self.job.space, pair, on_error="return")

    def _round_tasks(
        self,
        pair: PairPlan,
        dep_shas: dict[tuple[int, int], str],
        series: str,
        round_: int,
        mode: str,
        chunks: list[Chunk],
        previous: list[str],
        weights: dict[str, int] | None = None,
        attempt: int = 1,
    ) -> list[dict[str, Any]]:
        """Run one round's chunk tasks (try `attempt` of them); returns their results."""
        client = self.client
        sources: dict[tuple[tuple[int, ...], int], list[str]] = {}  # (layer, chunk) -> its parts
        tasks: list[ChunkTask] = [(layer, c, lo, hi, None) for layer, c, lo, hi in chunks]
        if mode != SWEEP:
            for name in previous:
                sources.setdefault(_part_of(name), []).append(name)
            # A frontier chunk without sources has nothing to do: in a pair's tail
            # (dozens of rounds deciding a few hundred positions) most have none.
            chunks = [chunk for chunk in chunks if (tuple(chunk[0]), chunk[1]) in sources]
            threads = sum(self.domain_threads().values()) or 1
            tasks = frontier_pieces(
                chunks,
                {key: sum((weights or {}).get(name, 0) for name in names) for key, names in sources.items()},
                threads,
            )

        def key(layer: tuple[int, int], c: int, piece: tuple[int, int, int] | None) -> str:
            return self.task_key(
                chunk_key(
                    pair.key,
                    round_,
                    self._chunk_index(pair, layer, c),
                    None if piece is None else piece[0],
                    attempt,
                )
            )

        futures = [
            client.submit(
                round_chunk_task,
                self.job,
                pair,
                dep_shas,
                series,
                round_,
                mode,
                layer,
                c,
                lo,
                hi,
                sources.get((tuple(layer), c), []),
                None if piece is None else piece[1:],
                key=key(layer, c, piece),
                **self.placement(pair, SOLVE),
                pure=False,
                retries=3,
            )
            for layer, c, lo, hi, piece in tasks
        ]
        with self.round_lock:
            self.round_futures.update(futures)
        try:
            return client.gather(futures)
        finally:
            with self.round_lock:
                self.round_futures.difference_update(futures)

    def _chunk_index(self, pair: PairPlan, layer: tuple[int, int], c: int) -> int:
        """The chunk's number in the pair (layers one after the other), for task keys."""
        return pair.layers.index(tuple(layer)) * len(chunk_ranges(pair.layer_size, self.chunk_size)) + c

    def memory_domains(self) -> set[str]:
        """What holds a round array: each host, or each worker when host memory is
        private to a worker process (tasks.memory_domain)."""
        return set(self.domain_threads())

    def domain_threads(self) -> dict[str, int]:
        """Threads of each memory domain (memory_domains)."""
        workers = worker_info(self.client)
        threads: Counter[str] = Counter()
        for address, w in workers.items():
            threads[address if is_private(self.job.space) else w["host"]] += worker_slots(w)
        return dict(threads)

    def _flush(
        self,
        pair: PairPlan,
        dep_shas: dict[tuple[int, int], str],
        series: str,
        round_: int,
        results: list[dict[str, Any]],
        target: tuple[int, int],
        attempt: int = 1,
    ) -> tuple[dict[str, int], set[str]]:
        """A frontier round's decisions gather in each host's round arrays: tasks on
        each host, one per thread, write them as checkpoint parts. Returns ({part:
        decisions}, the hosts that wrote parts). A host that ran tasks of the round
        but has no worker left lost its decisions: _RedoRound."""
        client = self.client
        threads = self.domain_threads()
        hosts = sorted(threads)
        ran = {r["host"] for r in results}
        gone = ran - set(hosts)
        if gone:
            raise _RedoRound(f"host {sorted(gone)[0]} ran tasks of it and has no worker left")
        ranges = [(c, lo, hi) for c, (lo, hi) in enumerate(chunk_ranges(pair.layer_size, self.chunk_size))]
        futures: dict[tuple[str, int], Future[dict[str, Any]]] = {}
        for host in hosts:
            n = max(1, min(len(ranges), threads[host]))
            for g in range(n):
                group = ranges[g * len(ranges) // n : (g + 1) * len(ranges) // n]
                futures[host, g] = client.submit(
                    flush_round_task,
                    self.job,
                    pair,
                    dep_shas,
                    series,
                    round_,
                    group,
                    host_tag(host),
                    target,
                    workers=[host],
                    allow_other_workers=False,
                    pure=False,
                    retries=2,
                    **self.placement(pair, BARRIER),
                    key=self.task_key(flush_key(pair.key, round_, target, host_tag(host), g, attempt)),
                )
        with self.round_lock:
            self.round_futures.update(futures.values())
        parts: dict[str, int] = {}
        flushed: set[str] = set()
        failed: str | None = None
        try:
            # Every flush is waited for, even after one failed: a flush still running
            # when the round runs again would empty its ranges of the new try's
            # decisions after taking the old ones (a lost decision is a wrong draw).
            for (host, _), future in futures.items():
                try:
                    result = self._wait_on_host(future, host)
                except Exception as exc:
                    if self.stop.is_set():  # the stop cancelled it: not a lost host
                        raise _Stopped() from None
                    if host in ran and failed is None:
                        why = first_line(exc)[:80]
                        failed = f"the flush on host {host} failed ({why})"
                    continue  # a host that ran nothing of the round had nothing to write
                parts.update(result["parts"])
                if result["parts"]:
                    flushed.add(host)
        finally:
            with self.round_lock:
                self.round_futures.difference_update(futures.values())
        if failed is not None:
            raise _RedoRound(failed)
        return parts, flushed

    def _wait_on_host(self, future: Future[dict[str, Any]], host: str) -> dict[str, Any]:
        """A flush task runs only on its host; if the host loses every worker meanwhile
        the task would wait for ever, so it is given up on then."""
        from distributed import TimeoutError as DaskTimeout

        fetch = ResultFetch(self.client, future)
        while True:
            # Waiting on the result itself, not on the task's end: a result held by a
            # worker that dies before it is fetched is lost, and the task, pinned to
            # its host, would wait for ever to be run again there.
            try:
                return fetch.wait(HOST_POLL_SECONDS)
            except DaskTimeout:  # still running (or run again): look at its host
                if future.status in ("error", "cancelled"):
                    raise
            if self.stop.is_set():
                raise _Stopped()
            if host not in self.memory_domains():
                future.cancel()
                raise DaskTimeout(f"host {host} has no worker left")

    # -- the main loop ----------------------------------------------------------------------
    def launch_ready(self, pending: list[PairPlan], pool: ThreadPoolExecutor) -> None:
        for pair in list(pending):
            if self.small(pair):
                if not all(d in self.finished or d in self.layer_futures for d in pair.deps):
                    continue
                self.submit_small(pair)
            else:
                if not self.synthetic and not all(d in self.finished for d in pair.deps):
                    continue  # its chunk tasks read the dependency layers from the store
                if not self.admit(pair):
                    continue  # waits until a large pair in flight is done
                self.in_flight[pair.key] = pair
                future = pool.submit(self.run_large, pair)

                def large_done(
                    f: PoolFuture[dict[tuple[int, int], Future[dict[str, Any]]]], key: str = pair.key
                ) -> None:
                    self.events.put(("large", (key, f)))

                future.add_done_callback(large_done)
            pending.remove(pair)

    # -- memory ---------------------------------------------------------------------------
    def store_reads(self) -> dict[str, int]:
        """Bytes each worker read from the store since the last call (checkpoints,
        dependency layers): what a round moves."""
        try:
            now = self.client.run(bytes_read)
        except Exception:  # a lost worker: this round's figure is partial
            return {}
        with self.round_lock:
            delta = {w: n - self.reads.get(w, 0) for w, n in now.items()}
            self.reads.update(now)
        return delta

    def sample_host_memory(self) -> None:
        """Note what the hosts' shared arrays hold now (the peak goes in the summary)."""
        try:
            held = self.client.run(host_memory_bytes, self.job.space)
        except Exception:  # a worker lost meanwhile: the next sample counts
            return
        with self.round_lock:
            self.host_memory_peak = max(self.host_memory_peak, max(held.values(), default=0))

    def hosts(self) -> dict[str, dict[str, Any]]:
        """host -> {"budget", "threads", "processes"}: what each host's workers may hold
        (the sum of their memory limits, at most the host's RAM)."""
        workers = worker_info(self.client)
        ram = self.client.run(host_ram_bytes)
        room = self.client.run(host_memory_room, self.job.space)
        hosts: dict[str, dict[str, Any]] = {}
        for address, info in workers.items():
            h = hosts.setdefault(
                info["host"],
                {"limits": [], "threads": 0, "processes": 0, "ram": 0, "room": None, "folder": ""},
            )
            h["limits"].append(info.get("memory_limit") or 0)
            h["threads"] += worker_slots(info)
            h["processes"] += 1
            h["ram"] = max(h["ram"], ram.get(address, 0))
            if address in room:
                h["room"], h["folder"] = room[address]
        for h in hosts.values():
            limited = all(h["limits"]) and h["limits"]
            h["budget"] = min(sum(h["limits"]), h["ram"]) if limited else h["ram"]
        return hosts

    def check_memory(self, pairs: Iterable[PairPlan]) -> None:
        """Every large pair must fit a host alone: one sentence naming the first that
        does not, before anything of it runs."""
        hosts = self.hosts()
        if not hosts:
            return
        for pair in pairs:
            if self.small(pair):
                continue
            for host, h in hosts.items():
                need = pair_memory(
                    self.job.variant,
                    pair,
                    self.chunk_size,
                    h["threads"],
                    h["processes"],
                    method=self.method_for(pair),
                )
                if h["room"] is not None and need.pair + need.deps > h["room"]:
                    raise BestemsheError(
                        f"{pair.key} needs {gib(need.pair + need.deps)} of shared arrays on each host but "
                        f"{h['folder']} on host {host} has room for {gib(h['room'])}: give the host (the "
                        "container's /dev/shm) more, or point BESTEMSHE_HOST_MEMORY at a larger RAM-backed "
                        "folder."
                    )
                if need.total > h["budget"]:
                    raise BestemsheError(
                        f"{pair.key} ({pair.positions:,} positions, {pair.dep_positions:,} in its dependency "
                        f"layers) needs about {gib(need.total)} on each host ({gib(need.pair)} for its codes "
                        f"and round arrays, {gib(need.deps)} for its dependencies, {gib(need.tasks)} for "
                        f"{h['threads']} running tasks, {gib(need.processes)} for {h['processes']} worker "
                        f"processes) but host {host} has {gib(h['budget'])}: give each host's workers more "
                        "memory (memory-limit, or memory per SLURM job), run fewer threads per host, or "
                        "use a smaller --chunk-size."
                    )

    def method_for(self, pair: PairPlan) -> str:
        """How a large pair is solved: counting where its states fit every host
        (memory.choose_method), else the frontier method; --method sweep or
        frontier as asked."""
        if pair.key not in self.methods:
            method = self.job.method
            if method == COUNTING:
                hosts = self.hosts().values()
                method = min(
                    (
                        choose_method(
                            self.job.variant,
                            pair,
                            self.chunk_size,
                            h["threads"],
                            h["processes"],
                            h["budget"],
                            h["room"],
                        )
                        for h in hosts
                    ),
                    key=lambda m: m != FRONTIER,
                    default=COUNTING,
                )
            self.methods[pair.key] = method
        return self.methods[pair.key]

    @property
    def inputs(self) -> list[tuple[int, int]]:
        """Dependency layers the plan reads from the output (none when synthetic)."""
        return [] if self.synthetic else self.plan.inputs

    def check_inputs(self, names: Container[str]) -> None:
        """Stop with one sentence when a dependency the plan does not solve (solve
        --pair A B) is not among `names` (manifest names of published layers)."""
        for layer in self.inputs:
            if layer_name(*layer) not in names:
                needing = next(p.key for p in self.plan.pairs if layer in p.deps)
                raise BestemsheError(
                    f"layer {layer_name(*layer)}, a dependency of {needing}, is not published intact in "
                    f"{self.store.shown}: solve it first (solve --min-captured {sum(layer)}), or use "
                    "--synthetic-deps."
                )

    def admit(self, pair: PairPlan) -> bool:
        """Whether `pair` can start now beside the large pairs in flight."""
        if not self.in_flight:
            return True
        for h in self.hosts().values():
            pairs = [*self.in_flight.values(), pair]
            need = together(
                self.job.variant,
                pairs,
                self.chunk_size,
                h["threads"],
                h["processes"],
                [self.method_for(p) for p in pairs],
            )
            if need.total > h["budget"]:
                return False
        return True

    def hold_back(self, pending: list[PairPlan], stopped: set[tuple[int, int]]) -> None:
        """Pairs that need a layer left unpublished (--stop-after-rounds) cannot start
        in this run: they join `stopped`, and so does what needs them."""
        held: list[str] = []
        while blocked := [p for p in pending if any(d in stopped for d in p.deps)]:
            for pair in blocked:
                pending.remove(pair)
                stopped.update(pair.layers)
                held.append(pair.key)
        if held:
            self.log(
                f"{counted(len(held), 'pair')} not started ({', '.join(held[:3])}"
                f"{', ...' if len(held) > 3 else ''}): each needs a pair stopped by --stop-after-rounds"
            )

    def run(self) -> SolveSummary:
        start = time.perf_counter()
        self.manifest = self.store.open_manifest(self.job.variant, self.synthetic_record)
        self.check_inputs(self.manifest["layers"])  # before anything is written
        self.store.write_manifest(self.manifest)  # fail early, before solving, if unwritable
        compile_times = self.client.run(warm_up, self.job.variant.pits)
        compile_seconds = max(compile_times.values()) if compile_times else 0.0
        self.log(f"kernels ready on {counted(len(compile_times), 'worker')} in {compile_seconds:.1f}s")
        self.finished = self.published()
        self.check_inputs({layer_name(*layer) for layer in self.finished})
        skipped = len(set(self.finished) & set(self.plan.layers))
        if skipped:
            self.log(f"{counted(skipped, 'layer')} already published, skipped")
        # The critical path's pairs first, where several could start.
        pending = sorted(
            (p for p in self.plan.pairs if self.unpublished(p)), key=lambda p: -self.urgency[p.key]
        )
        self.check_memory(pending)
        self.report_resume(skipped, pending)
        todo = {layer for p in pending for layer in self.unpublished(p)}
        write_json(
            self.store,
            SOLVE_RECORD,
            {
                "min_captured": self.plan.min_captured,
                "chunk_size": self.chunk_size,
                "method": self.job.method,
                "dtz": self.job.dtz,
                "started": time.time(),
            },
        )
        self.progress.started(
            self.plan,
            dict(self.finished),
            {
                p.key: len(p.layers) * len(chunk_ranges(p.layer_size, self.chunk_size))
                for p in pending
                if not self.small(p)
            },
        )
        positions = 0
        stopped: set[tuple[int, int]] = set()
        pool = ThreadPoolExecutor(max_workers=max(1, len(pending)), thread_name_prefix="bestemshe-pair")
        try:
            self.launch_ready(pending, pool)
            while todo - set(self.finished) - stopped:
                kind, item = self.events.get()
                if kind == "large":
                    key, future = item
                    published = future.result()
                    del self.in_flight[key]
                    if not published:  # --stop-after-rounds: the pair ends unpublished
                        stopped.update(self.plan.pair_by_key(key).layers)
                        self.hold_back(pending, stopped)
                    for layer, f in published.items():
                        self.layer_futures[layer] = f
                        self._watch(f, "layer")
                else:
                    positions += self.record(item.result())
                self.launch_ready(pending, pool)
        except BaseException as exc:
            self.stop.set()
            self.progress.failed(first_line(exc))
            # Nothing of a failed solve should keep a shared cluster busy: cancel every
            # task in flight (and finished layers) and wait for the pair threads. Keys
            # carry the run (task_key), so a later solve never gets these tasks. A
            # finished task that Dask recomputes after its worker died finds its layer
            # published and writes nothing: tasks._already_published.
            with self.round_lock:
                in_flight = list(self.round_futures)
            self.client.cancel(list(self.layer_futures.values()) + in_flight)
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        peaks = self.client.run(peak_rss_bytes)
        self.sample_host_memory()
        summary = SolveSummary(
            len(todo - stopped),
            skipped,
            positions,
            time.perf_counter() - start,
            compile_seconds,
            peaks,
            self.host_memory_peak,
        )
        self.progress.finished(summary)
        return summary

    def report_resume(self, published: int, pending: list[PairPlan]) -> None:
        """Tell the listeners (the run log, which says the resume line) what earlier
        runs left: layers published, and the large pairs' checkpointed rounds."""
        pairs: list[dict[str, Any]] = []
        rebuilding: set[str] = set()
        for pair in pending:
            if self.small(pair):
                continue
            markers = completed_rounds(self.store, pair.key)
            if not markers:
                continue
            self.found_markers[pair.key] = markers
            pairs.append(
                {
                    "pair": pair.key,
                    "after_round": len(markers) - 1,
                    "checkpointed_at": markers[-1].get("checkpointed_at"),
                    "publishing": not markers[-1]["decided"],  # its rounds were over
                }
            )
            # A counting pair rebuilds its states before its next round; one whose
            # rounds are over goes straight to publication.
            if markers[-1]["decided"] and self.method_for(pair) == COUNTING:
                rebuilding.add(pair.key)
        self.progress.resumed(published, pairs, rebuilding)

    def record(self, entry: dict[str, Any]) -> int:
        layer = (entry["k1"], entry["k2"])
        self.manifest["layers"][layer_name(*layer)] = entry
        self.store.write_manifest(self.manifest)  # after the layer's files: the entry comes last
        self.finished[layer] = entry
        c = entry["counts"]
        done = sum(1 for l in self.plan.layers if l in self.finished)
        self.log(
            f"layer {layer_name(*layer)} done ({done}/{len(self.plan.layers)}): "
            f"{entry['positions']:,} positions, win {c['win']:,} draw {c['draw']:,} "
            f"loss {c['loss']:,}, {counted(entry['rounds'], 'round')}, {entry['solve_seconds']:.2f}s"
        )
        self.progress.layer_done(entry)
        pair = self.plan.pair_of(layer)
        if all(l in self.finished for l in pair.layers):
            self.release(pair)
        return entry["positions"]

    def release(self, pair: PairPlan) -> None:
        """A pair is published: drop its checkpoints, its host arrays and the
        dependency layers no pending pair needs."""
        if not self.small(pair):
            self.store.remove(pair_prefix(pair.key))
        needed = {d for p in self.plan.pairs if not all(l in self.finished for l in p.layers) for d in p.deps}
        unneeded = [d for d in pair.deps if d not in needed]
        self.client.run(
            drop_from_caches, self.job.space, None if self.small(pair) else pair, unneeded, self.job.variant
        )


def _part_of(name: str) -> tuple[tuple[int, int], int]:
    """(layer, chunk) of a part a round marker lists (run_large starts over when
    an older marker's are not parts' names)."""
    found = parse_part(name)
    assert found is not None
    return found


def is_small_round(sources: int, chunk_size: int) -> bool:
    """Whether a frontier round of `sources` sources runs as one task."""
    return sources <= min(SMALL_ROUND_SOURCES, chunk_size // 64)


def task_seconds(results: list[dict[str, Any]]) -> dict[str, float]:
    """A round's task time by phase, summed over its tasks (round_chunk_task's
    "phases"; "other" is the rest: writing a sweep's part, the task's start)."""
    total: dict[str, float] = {}
    for r in results:
        for phase, seconds in r.get("phases", {}).items():
            total[phase] = total.get(phase, 0.0) + seconds
        total["other"] = total.get("other", 0.0) + r["seconds"] - sum(r.get("phases", {}).values())
    return {phase: round(seconds, 3) for phase, seconds in total.items()}


def frontier_pieces(
    chunks: list[Chunk], sources: dict[tuple[tuple[int, ...], int], int], threads: int
) -> list[ChunkTask]:
    """A frontier half's tasks: (layer, chunk, lo, hi, piece) where piece is None
    (the whole chunk) or (number, piece_lo, piece_hi), the part of the chunk's
    sources the task re-evaluates. Chunks are split in proportion to their sources
    (`sources`: {(layer, chunk): decisions}; all zero when unknown) into about
    PIECES_PER_THREAD tasks per thread, none under MIN_PIECE positions or
    MIN_PIECE_SOURCES sources."""
    total = sum(sources.get((tuple(layer), c), 0) for layer, c, _, _ in chunks)
    share = total / (PIECES_PER_THREAD * threads)
    tasks: list[ChunkTask] = []
    for layer, c, lo, hi in chunks:
        count = sources.get((tuple(layer), c), 0)
        pieces = min(
            math.ceil(count / share) if share else 1, (hi - lo) // MIN_PIECE, count // MIN_PIECE_SOURCES
        )
        if pieces <= 1:
            tasks.append((layer, c, lo, hi, None))
            continue
        step = -(-(hi - lo) // pieces)
        edges = [min(lo + i * step, hi) for i in range(pieces)] + [hi]
        tasks += [
            (layer, c, lo, hi, (i, a, b)) for i, (a, b) in enumerate(itertools.pairwise(edges)) if a < b
        ]
    return tasks


def run_description(job: Job, plan: Plan, chunk_size: int) -> dict[str, Any]:
    """What the run log says of a run's command: its scope and options, the output
    by its redacted URL (never credentials)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("bestemshe_dist")
    except PackageNotFoundError:  # run from a source tree that was never installed
        installed = None
    return {
        "version": installed,
        "out": redact(job.url),
        "variant": job.variant.as_dict(),
        "min_captured": plan.min_captured,
        "pairs": len(plan.pairs),
        "layers": len(plan.layers),
        "positions": plan.positions,
        "method": job.method,
        "dtz": job.dtz,
        "chunk_size": chunk_size,
        "synthetic": job.synthetic is not None,
    }


def cluster_size(client: Client) -> dict[str, int]:
    """The cluster a run had at its start: its core-seconds are its wall time times
    `threads`, the threads its work runs on (worker_slots: not the one each worker
    keeps for round barriers)."""
    workers = worker_info(client)
    return {
        "workers": len(workers),
        "hosts": len({w["host"] for w in workers.values()}),
        "threads": sum(worker_slots(w) for w in workers.values()),
    }


def host_sampler(client: Client, space: str) -> Callable[[], dict[str, int]]:
    """What the run log samples at each beat: the largest worker's peak RSS and
    the most any host's shared arrays hold now."""

    def sample() -> dict[str, int]:
        rss = client.run(peak_rss_bytes)
        held = client.run(host_memory_bytes, space)
        return {
            "worker_rss_bytes": max(rss.values(), default=0),
            "host_arrays_bytes": max(held.values(), default=0),
        }

    return sample


def space_name(client: Client, name: str) -> str:
    """The solve run's host memory space: private to each worker process when every
    host runs one (its threads share it; hostmem.py says why that is faster)."""
    per_host = Counter(w["host"] for w in worker_info(client).values())
    return private_name(name) if per_host and max(per_host.values()) == 1 else name


def space_prefix(url: str) -> str:
    """The start of the host-memory space names of every solve into `url`."""
    return "solve-" + hashlib.sha1(str(url).encode()).hexdigest()[:12] + "-"


def solve(
    client: Client,
    job: Job,
    plan: Plan,
    log: Callable[[str], object] = lambda line: None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    restart: bool = False,
    progress: Progress | None = None,
    stop_after_rounds: int | None = None,
) -> SolveSummary:
    store = job.store(patient=False)  # waits once reached (ensure_root), never before
    store.ensure_root()
    with Lease(store) as lease:
        if restart:
            store.remove(PAIRS)
            log("checkpoints discarded (--restart)")
        # This run's arrays in each host's shared memory; what an earlier run into
        # the same output left there (a crash) goes first.
        prefix = space_prefix(job.url)
        job = replace(job, space=space_name(client, prefix + lease.token[:12]))
        client.run(remove_spaces, prefix, job.space)
        describe = run_description(job, plan, chunk_size) | cluster_size(client)
        runlog = RunLog(store, describe, host_sampler(client, job.space), log)
        try:
            with runlog:
                listeners = Tee(progress, runlog)
                return Driver(client, job, plan, log, chunk_size, listeners, stop_after_rounds).run()
        finally:
            try:
                client.run(end_of_run, job.space)
            except Exception:  # a lost worker has nothing left to free
                pass
            # Workers on this host that died first (a signal to the whole process
            # group) could not free their space: the files go all the same.
            remove_spaces(prefix)
