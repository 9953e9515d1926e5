"""What Dask workers run. Tasks get small arguments (a Job, a PairPlan, round and
chunk numbers, manifest entries); layer data moves only through the store and
each host's shared memory (hostpair.py), never through the driver.

- solve_pair_task / publish_layer_task: a small pair solved whole in one task.
- round_chunk_task: one chunk of one round of a large pair, on the host's copy of
  the pair (brought up to the previous round from the checkpoints); a sweep
  writes its chunk's decisions, a frontier round gathers them in the host's
  round arrays;
- flush_round_task: after a frontier round, one per thread on each host: its decisions written
  as checkpoint parts;
- small_round_task: a frontier round with few sources (a pair's tail) in one task,
  its parts written by it;
- count_round_task: a round of a pair solved by counting, whole, on the one host
  that holds its states (hostcount.py), over that host's threads;
- publish_part_task / assemble_layer_task: a large pair's blocks compressed by
  the workers (distances rebuilt from the checkpoints a chunk at a time), then
  each layer file assembled from the compressed frames.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..data import format as fmt
from ..data.cache import OnceCache
from ..data.checkpoint import decode_part, encode_part
from ..data.checksums import FileSums, LayerSums, manifest_record
from ..data.layer_files import DTZ_LEVEL, distance_bytes, distance_width, encode_distances, encode_layer
from ..data.store import Store, StoreJob
from ..game.dag import PairPlan
from ..game.geometry import partner
from ..game.variant import Variant
from ..naming import (
    counted_mark,
    flush_lock,
    layer_file,
    layer_name,
    parse_part,
    part_name,
    publish_part_name,
    round_array,
    small_round_mark,
    staged,
    sums_file,
)
from ..solve import code_arrays, counting
from ..solve.pair import (
    COUNTING,
    FRONTIER,
    SWEEP,
    Delta,
    PairState,
    chunk_ranges,
    distances_from,
    solve_pair,
)
from . import hostmem
from .hostcount import count_round, forget_all_counting, forget_counting, host_counting
from .hostpair import DepSource, dep_bundle, forget_all, forget_pair, free_deps, host_pair

WORDS_PER_BLOCK = fmt.BLOCK_BITS // 32


@dataclass(frozen=True)
class Job(StoreJob):
    """A solve's tasks: the store and variant, and how to solve."""

    method: str = COUNTING
    dtz: bool = False  # also write distance tables (layer_*_dtz.bin)
    space: str = ""  # this solve run's host memory (hostmem.py); set by the driver
    synthetic: int | None = None  # seed of synthetic dependency layers (solve --synthetic-deps)

    @property
    def dep_source(self) -> DepSource:
        return DepSource(self.synthetic)


def write_layer_files(
    store: Store,
    layer: tuple[int, int],
    outputs: dict[str, bytes],
    place: Callable[[str], str] = lambda name: name,
) -> tuple[dict[str, tuple[int, str]], dict[str, Any]]:
    """Write a layer's files (kind -> bytes), each whole, then its checksum sidecar,
    at place(name). Returns ({kind: (bytes, sha256)}, the manifest's checksums record)."""
    files: dict[str, tuple[int, str]] = {}
    sums: dict[str, FileSums] = {}
    for kind, data in outputs.items():
        name = layer_file(*layer, kind)
        store.write_bytes(place(name), data)
        files[kind] = (len(data), hashlib.sha256(data).hexdigest())
        sums[kind] = FileSums.of_file(data, name)
    made = LayerSums((layer[0], layer[1]), sums)
    sidecar = made.to_bytes()
    store.write_bytes(place(sums_file(*layer)), sidecar)
    return files, manifest_record(made, sidecar)


# -- small pairs: one task solves, one task per layer publishes --------------------
def solve_pair_task(
    job: Job, pair: PairPlan, dep_shas: dict[tuple[int, int], str], *dep_entries: dict[str, Any]
) -> dict[tuple[int, int], dict[str, Any]]:
    """Solve a pair whole, write its layer files to staging; return their entries.

    dep_entries are the results of the dependency layers' publish tasks (so the
    graph shows the dependency); dep_shas covers layers published before.
    """
    shas = dict(dep_shas)
    for entry in dep_entries:
        shas[(entry["k1"], entry["k2"])] = entry["sha256"]["win"]
    space = hostmem.space(job.space)
    bundles = {layer: dep_bundle(space, job, job.dep_source, *layer, shas) for layer in pair.layers}
    result = solve_pair(
        job.variant, pair.a, pair.b, None, method=job.method, with_dtz=job.dtz, bundles=bundles
    )
    store = job.store()
    entries: dict[tuple[int, int], dict[str, Any]] = {}
    for k1, k2 in pair.layers:
        start = time.perf_counter()
        win, draw, counts = encode_layer(result.codes[(k1, k2)], pair.layer_size)
        outputs = {"win": win, "draw": draw}
        max_dtz = None
        if job.dtz:
            assert result.dtz is not None  # solve_pair makes distances with_dtz
            max_dtz = int(result.dtz[(k1, k2)].max())
            outputs["dtz"] = encode_distances(result.dtz[(k1, k2)], distance_width(max_dtz))
        files, checksums = write_layer_files(store, (k1, k2), outputs, staged)
        entries[(k1, k2)] = layer_entry(
            pair,
            (k1, k2),
            files,
            checksums,
            counts,
            result.rounds,
            result.evaluations,
            job.method,
            result.seconds,
            time.perf_counter() - start,
            max_dtz,
            result.unmoves,
        )
    return entries


def layer_entry(
    pair: PairPlan,
    layer: tuple[int, int],
    files: dict[str, tuple[int, str]],
    checksums: dict[str, Any],
    counts: Iterable[int],
    rounds: int,
    evaluations: int,
    method: str,
    solve_s: float,
    publish_s: float,
    max_dtz: int | None = None,
    unmoves: int = 0,
) -> dict[str, Any]:
    wins, draws, losses = counts
    entry: dict[str, Any] = {
        "k1": layer[0],
        "k2": layer[1],
        "pair": pair.key,
        "positions": pair.layer_size,
        "bytes": {kind: size for kind, (size, _) in files.items()},
        "sha256": {kind: digest for kind, (_, digest) in files.items()},
        "checksums": checksums,  # the sidecar of every frame's checksum (checksums.py)
        "counts": {"win": int(wins), "draw": int(draws), "loss": int(losses)},
        "rounds": rounds,
        "evaluations": int(evaluations),  # the pair's, over all rounds (as "unmoves")
        "unmoves": int(unmoves),  # un-moves walked from decided positions (counting)
        "method": method,
        "solve_seconds": round(solve_s, 3),
        "publish_seconds": round(publish_s, 3),
    }
    if max_dtz is not None:
        # DRAW positions store 0; the width says how to read the table.
        entry["dtz"] = {"max": int(max_dtz), "bytes_per_position": distance_width(max_dtz)}
    return entry


def publish_layer_task(
    job: Job, layer: tuple[int, int], pair_entries: dict[tuple[int, int], dict[str, Any]]
) -> dict[str, Any]:
    """Move a layer's staged files into place (each appears whole); the driver
    writes the manifest entry afterwards."""
    k1, k2 = layer
    store = job.store()
    published = _already_published(store, layer)
    if published is not None:
        return published
    entry = pair_entries[layer]
    for kind, size in entry["bytes"].items():
        name = layer_file(k1, k2, kind)
        store.move(staged(name), name, size)
    store.move(staged(sums_file(k1, k2)), sums_file(k1, k2))  # last: a file is never checked by a stale one
    return entry


def _already_published(store: Store, layer: tuple[int, int]) -> dict[str, Any] | None:
    """The manifest entry of a layer already published. Dask recomputes a finished
    task whose result died with a worker; a layer's files, once published, are
    never written again (its pair's state is gone by then)."""
    manifest = store.read_manifest()
    return None if manifest is None else manifest["layers"].get(layer_name(*layer))


# -- large pairs: rounds of chunk tasks -----------------------------------------------
# A round's checkpoint is a set of parts, each the decisions of one chunk of one
# layer: `<k1>_<k2>-c<chunk>-s` (a sweep task's, its own chunk) or
# `<k1>_<k2>-c<chunk>-h<host>` (a frontier round's decisions gathered on one host).


def host_tag(host: str) -> str:
    return "h" + hashlib.sha1(host.encode()).hexdigest()[:8]


def _write_part(store: Store, name: str, delta: Delta) -> None:
    if delta.decided * 16 < delta.hi - delta.lo:
        delta = delta.sparse()  # a sparse checkpoint is smaller to write and to read
    store.write_bytes(name, encode_part(delta))


def round_chunk_task(
    job: Job,
    pair: PairPlan,
    dep_shas: dict[tuple[int, int], str],
    series: str,
    round_: int,
    mode: str,
    layer: tuple[int, int],
    chunk: int,
    lo: int,
    hi: int,
    sources: list[str],
    piece: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """Round `round_` for ranks [lo, hi) of `layer`, on this host's copy of the pair
    (brought up to the previous round from the checkpoints first).

    A sweep evaluates the chunk and writes its decisions as its part of the
    checkpoint. A frontier round reads its sources, the previous round's decisions
    of this chunk (`sources`: their parts), and re-evaluates their predecessors in
    the partner layer, those with rank in `piece` (lo, hi) if given, else all;
    the decisions gather in the host's round array, which flush_round_task turns
    into checkpoint parts once every task of the round is done. Either way the
    task holds a chunk, never a layer."""
    start = time.perf_counter()
    host = host_pair(job, pair, dep_shas, job.dep_source)
    exact = host.sync(round_ - 1)
    state = host.state
    result: dict[str, Any] = {
        "host": memory_domain(job),
        "exact": exact,
        "name": None,
        "built": host.built_here(),
    }
    # Where a round's time goes (the marker sums them): bringing the host's copy up
    # to the previous round, reading the task's sources, the kernel, writing.
    phases = result["phases"] = {"sync": time.perf_counter() - start}
    if mode == SWEEP:
        mark = time.perf_counter()
        delta = state.sweep(layer, lo, hi, round_)
        assert delta.dense is not None  # a sweep's decisions come dense
        phases["kernel"] = time.perf_counter() - mark
        if delta.decided:
            result["name"] = part_name(pair.key, round_, layer, chunk, "s")
            _write_part(job.store(), result["name"], delta)
        result.update(
            wins=delta.wins,
            losses=delta.losses,
            evaluations=delta.evaluations,
            undecided_before=delta.evaluations,
            task_bytes=delta.dense.nbytes,
        )
    else:
        mark = time.perf_counter()
        fresh_lo, fresh, biggest = _SOURCES.get(
            (job.space, pair.key, round_, tuple(layer), chunk),
            lambda: _read_sources(job.store(), lo, hi, sources),
        )
        phases["sources"] = time.perf_counter() - mark
        mark = time.perf_counter()
        wins, losses, evaluated = state.frontier(layer, fresh, fresh_lo, *(piece or (lo, hi)))
        phases["kernel"] = time.perf_counter() - mark
        result.update(wins=wins, losses=losses, evaluations=evaluated, task_bytes=fresh.nbytes + biggest)
    result["seconds"] = time.perf_counter() - start
    return result


def _read_sources(
    store: Store, lo: int, hi: int, names: list[str]
) -> tuple[tuple[int, NDArray[np.uint64], int], int]:
    """A frontier chunk's sources: codes from position lo & ~31 to hi holding just
    the decisions of the parts `names`. Returns ((that start, the codes, the
    largest part's bytes), what the cache counts)."""
    fresh_lo = lo & ~31
    fresh = code_arrays.new_codes(hi - fresh_lo)
    biggest = 0
    for name in names:
        part = decode_part(store.read_bytes(name))
        biggest = max(biggest, part.nbytes())
        part.apply(fresh, offset=fresh_lo)
        del part
    return (fresh_lo, fresh, biggest), 1


def _worker_threads() -> int:
    try:
        from distributed import get_worker

        return get_worker().state.nthreads
    except (ImportError, ValueError, AttributeError):
        return 1


# The sources of the chunks this process's frontier tasks read last, counted in
# chunks (at most one per thread: each running task holds one anyway). A chunk's
# sources are read by each of its pieces (frontier_pieces splits a chunk by its
# sources among the threads); pair 8-12's frontier tasks spent 13.9 s of 94 s
# reading them, each piece for itself.
_SOURCES = OnceCache(budget=_worker_threads)


def memory_domain(job: Job) -> str:
    """Where this task's round decisions gather, as task restrictions name it: the
    host as the scheduler knows it, or the worker's address when the solve's host
    memory is private to each worker process (hostmem.py)."""
    try:
        from distributed import get_worker
        from distributed.comm import get_address_host

        address = get_worker().address
        return address if hostmem.is_private(job.space) else get_address_host(address)
    except (ImportError, ValueError):
        return "local"


def flush_round_task(
    job: Job,
    pair: PairPlan,
    dep_shas: dict[tuple[int, int], str],
    series: str,
    round_: int,
    chunks: list[tuple[int, int, int]],
    tag: str,
    layer: tuple[int, int],
) -> dict[str, Any]:
    """After every task of one half of a frontier round (the one deciding `layer`):
    write this host's decisions of it in `chunks` ((chunk, lo, hi): ranks [lo, hi)
    of its round array) as checkpoint parts, one per chunk that has any, emptying
    each range for the other half. A host's chunks are split among as many of
    these tasks as it has threads (one task per host took 0.15-0.7 s a half on
    pair 8-12, the other core idle). Each part is written before its range is
    emptied, so a retry after a crash finds it. Returns the parts and their
    decisions."""
    space = hostmem.space(job.space)
    if not space.has(round_array(pair.key)):
        return {"parts": {}, "tag": tag}  # this host holds nothing of the pair
    state = host_pair(job, pair, dep_shas, job.dep_source).state
    store = job.store()
    parts: dict[str, int] = {}
    for chunk, lo, hi in chunks:
        with space.locked(flush_lock(pair.key, chunk)):
            parts.update(_flush_chunk(store, state, pair, round_, layer, chunk, lo, hi, tag))
    return {"parts": parts, "tag": tag}


def _flush_chunk(
    store: Store,
    state: PairState,
    pair: PairPlan,
    round_: int,
    layer: tuple[int, int],
    chunk: int,
    lo: int,
    hi: int,
    tag: str,
) -> dict[str, int]:
    """Write the round array's decisions of `layer` in [lo, hi) as the chunk's part,
    then empty the range; returns {part: decisions} (nothing when none)."""
    name = part_name(pair.key, round_, layer, chunk, tag)
    delta = state.take(layer, lo, hi, round_, clear=False)
    parts: dict[str, int] = {}
    if delta.decided:
        _write_part(store, name, delta)
        parts[name] = delta.decided
    elif store.exists(name):
        # An earlier try wrote the part, then emptied the range.
        parts[name] = decode_part(store.read_bytes(name)).decided
    state.clear(layer, lo, hi)
    return parts


def small_round_task(
    job: Job,
    pair: PairPlan,
    dep_shas: dict[tuple[int, int], str],
    series: str,
    round_: int,
    chunk_size: int,
    sources: list[str],
) -> dict[str, Any]:
    """A frontier round with few sources (`sources`: the previous round's parts),
    whole in one task: each half's frontier over every chunk that has sources,
    then its decisions taken out of this host's round array and written as parts,
    before the other half. The same decisions and parts as the round spread over
    tasks, without its four waits on the cluster (two halves, two flushes): a pair's
    tail is dozens of such rounds (pair 8-12: 49 rounds deciding under 100,000
    positions each, 0.2 s each through the cluster, 0.05 s of work)."""
    start = time.perf_counter()
    host = host_pair(job, pair, dep_shas, job.dep_source)
    exact = host.sync(round_ - 1)
    state, space = host.state, host.space
    domain = memory_domain(job)
    tag, store = host_tag(domain), job.store()
    ranges = chunk_ranges(pair.layer_size, chunk_size)
    by_chunk: dict[tuple[tuple[int, int], int] | None, list[str]] = {}  # (layer, chunk) -> its parts
    for name in sources:
        by_chunk.setdefault(parse_part(name), []).append(name)
    result: dict[str, Any] = {
        "host": domain,
        "exact": exact,
        "built": host.built_here(),
        "name": None,
        "parts": {},
        "wins": 0,
        "losses": 0,
        "evaluations": 0,
        "task_bytes": 0,
        "phases": {"sync": time.perf_counter() - start},
    }
    phases = result["phases"]
    with space.locked(small_round_mark(pair.key)):
        # A try of this round that died here left decisions in the round array (a
        # host array outlives a worker process): empty it, or they would be taken
        # as the other layer's.
        if space.read_state(small_round_mark(pair.key), {}).get("round") == round_:
            for layer in pair.layers:
                state.clear(layer, 0, pair.layer_size)
        space.write_state(small_round_mark(pair.key), {"round": round_})
        for target in pair.layers:
            source = partner(target)
            mark = time.perf_counter()
            for c, (lo, hi) in enumerate(ranges):
                names = by_chunk.get((source, c))
                if not names:
                    continue
                (fresh_lo, fresh, _), _ = _read_sources(store, lo, hi, names)
                wins, losses, evaluated = state.frontier(source, fresh, fresh_lo, lo, hi)
                result["wins"] += wins
                result["losses"] += losses
                result["evaluations"] += evaluated
                result["task_bytes"] = max(result["task_bytes"], fresh.nbytes)
            phases["kernel"] = phases.get("kernel", 0.0) + time.perf_counter() - mark
            mark = time.perf_counter()
            for c, (lo, hi) in enumerate(ranges):
                result["parts"].update(_flush_chunk(store, state, pair, round_, target, c, lo, hi, tag))
            phases["flush"] = phases.get("flush", 0.0) + time.perf_counter() - mark
    result["seconds"] = time.perf_counter() - start
    return result


def count_round_task(
    job: Job,
    pair: PairPlan,
    dep_shas: dict[tuple[int, int], str],
    series: str,
    round_: int,
    chunk_size: int,
    sources: list[str],
    threads: int,
) -> dict[str, Any]:
    """Round `round_` of a pair solved by counting, whole, on this host's threads
    (hostcount.count_round): its parts written, their names and decisions returned."""
    domain = memory_domain(job)
    store = job.store()
    result = count_round(
        job,
        pair,
        dep_shas,
        round_,
        chunk_size,
        sources,
        threads,
        host_tag(domain),
        lambda name, delta: _write_part(store, name, delta),
        lambda r, layer, chunk, tag: part_name(pair.key, r, layer, chunk, tag),
    )
    result.update(host=domain, exact={}, name=None)
    return result


def publish_part_task(
    job: Job,
    pair: PairPlan,
    dep_shas: dict[tuple[int, int], str],
    series: str,
    final_round: int,
    layer: tuple[int, int],
    table: str,
    group: int,
    first_block: int,
    end_block: int,
    width: int = 1,
    round_parts: list[list[str]] | None = None,
    method: str = FRONTIER,
) -> dict[str, Any]:
    """Compress blocks [first_block, end_block) of one of a solved layer's files and
    write the frames, concatenated, as part files: table "bits" gives the win and
    draw files' blocks (from this host's codes), table "dtz" the distance file's
    (`width` bytes a position), rebuilt for just these positions from the
    checkpoints (`round_parts`: per round, the names of its parts that hold
    positions of this range). `method`: how the pair was solved (counting holds
    states, not codes)."""
    npos = pair.layer_size
    nbytes = (end_block - first_block) * fmt.BLOCK_BYTES
    result: dict[str, Any] = {"table": table, "group": group, "sizes": {}}
    if _already_published(job.store(), layer) is not None:
        return result  # recomputed after its layer was published (its worker died): nothing to do
    if table == "bits":
        w0 = first_block * WORDS_PER_BLOCK
        w1 = min(end_block * WORDS_PER_BLOCK, code_arrays.code_words(npos))
        if method == COUNTING:
            counted = host_counting(job, pair, dep_shas, job.dep_source)
            with counted.space.locked(counted_mark(pair.key)):
                counted.marked(final_round)
                codes = counted.state.codes_of(layer, 32 * w0, min(32 * w1, npos))[0]
            w1 = w0 + codes.shape[0]
        else:
            host = host_pair(job, pair, dep_shas, job.dep_source)
            host.sync(final_round)
            codes = host.state.codes[layer][w0:w1]
        win = np.zeros(nbytes, np.uint8)
        draw = np.zeros(nbytes, np.uint8)
        counts = code_arrays.codes_to_bitsets(
            codes, npos, w0, win.view(np.uint32)[: w1 - w0], draw.view(np.uint32)[: w1 - w0]
        )
        result["counts"] = [int(c) for c in counts]
        blocks: dict[str, NDArray[np.uint8]] = {"win": win, "draw": draw}
    else:
        lo = first_block * fmt.BLOCK_BYTES // width
        hi = min(end_block * fmt.BLOCK_BYTES // width, npos)
        store = job.store()

        def rounds() -> Iterator[list[Delta]]:
            assert round_parts is not None  # the driver gives a distance part its checkpoints
            for names in round_parts:
                yield [decode_part(store.read_bytes(name)) for name in names]

        dtz = distances_from(job.variant, job.variant.board_stones(*layer), lo, hi, rounds(), width)
        raw = np.zeros(nbytes, np.uint8)
        data = distance_bytes(dtz, width)
        raw[: data.shape[0]] = data
        result["max"] = int(dtz.max()) if dtz.shape[0] else 0
        blocks = {"dtz": raw}
    store = job.store()
    for kind, raw in blocks.items():
        frames = fmt.compress_blocks(raw[:nbytes], level=DTZ_LEVEL if kind == "dtz" else fmt.ZSTD_LEVEL)
        store.write_bytes(publish_part_name(pair.key, layer, kind, group), b"".join(frames))
        result["sizes"][kind] = [len(f) for f in frames]
    return result


def assemble_layer_task(
    job: Job,
    pair: PairPlan,
    layer: tuple[int, int],
    parts: list[dict[str, Any]],
    rounds: int,
    evaluations: int,
    solve_seconds: float,
    method: str = FRONTIER,
    unmoves: int = 0,
) -> dict[str, Any]:
    """Build a layer's files from the compressed parts (no decompression) and put
    each in place whole; returns the manifest entry."""
    start = time.perf_counter()
    store = job.store()
    published = _already_published(store, layer)
    if published is not None:
        return published
    parts = sorted(parts, key=lambda p: p["group"])
    outputs: dict[str, bytes] = {}
    for kind in ("win", "draw", "dtz"):
        frames: list[bytes] = []
        for part in parts:
            if kind not in part["sizes"]:
                continue
            data = store.read_bytes(publish_part_name(pair.key, layer, kind, part["group"]))
            offset = 0
            for size in part["sizes"][kind]:
                frames.append(data[offset : offset + size])
                offset += size
        if frames:
            outputs[kind] = fmt.build_file(frames)
    files, checksums = write_layer_files(store, layer, outputs)
    counts = np.sum([p["counts"] for p in parts if p["table"] == "bits"], axis=0)
    dtz_parts = [p["max"] for p in parts if p["table"] == "dtz"]
    return layer_entry(
        pair,
        layer,
        files,
        checksums,
        counts,
        rounds,
        evaluations,
        method,
        solve_seconds,
        time.perf_counter() - start,
        max(dtz_parts) if dtz_parts else None,
        unmoves,
    )


# -- upkeep ----------------------------------------------------------------------------
def check_layer_task(job: Job, layer: tuple[int, int], entry: dict[str, Any]) -> dict[str, Any] | None:
    """A published layer's manifest entry if its files are intact (the recorded sizes
    and sha256, its checksum sidecar too), else None. A layer published before
    sidecars existed gets one here, from the files just matched against the
    manifest, and the entry returned records it."""
    store = job.store()
    if job.dtz and "dtz" not in entry["bytes"]:
        return None  # published without the distance table this run asks for
    data: dict[str, bytes] = {}
    for kind in entry["bytes"]:
        name = layer_file(*layer, kind)
        if not store.exists(name) or store.size(name) != entry["bytes"][kind]:
            return None
        data[kind] = store.read_bytes(name)
        if hashlib.sha256(data[kind]).hexdigest() != entry["sha256"][kind]:
            return None
    record = entry.get("checksums")
    sidecar: bytes | None
    if not record:
        sums = LayerSums(
            (layer[0], layer[1]),
            {kind: FileSums.of_file(raw, layer_file(*layer, kind)) for kind, raw in data.items()},
        )
        sidecar = sums.to_bytes()
        store.write_bytes(sums_file(*layer), sidecar)
        return {**entry, "checksums": manifest_record(sums, sidecar)}
    sidecar = store.read_optional(record["file"])
    if sidecar is None or hashlib.sha256(sidecar).hexdigest() != record["sha256"]:
        return None
    return entry


def drop_from_caches(
    space_name: str,
    pair: PairPlan | None = None,
    layers: Iterable[tuple[int, int]] = (),
    variant: Variant | None = None,
) -> int:
    """Run on every worker when a pair is done: free its host arrays and the
    dependency layers no pending pair needs. Returns the bytes the host still holds."""
    space = hostmem.space(space_name)
    if pair is not None:
        forget_pair(space_name, pair)
        forget_counting(space_name, pair)
        _SOURCES.drop(lambda key: key[:2] == (space_name, pair.key))
    if layers:
        assert variant is not None  # the driver names the variant with the layers
        free_deps(space, variant, layers)
    return space.bytes_held()


def running_keys(dask_worker: Any) -> list[str]:
    """Keys of the tasks this worker runs now: a cancelled task is among them until
    it returns (Dask cannot stop a running thread)."""
    return [str(ts.key) for ts in dask_worker.state.all_running_tasks]


def empty_round_array(space_name: str, pair: PairPlan) -> None:
    """Empty this host's round array of a large pair: a frontier round run again
    starts from nothing of the try that failed, whose decisions a crash may have
    left there half flushed."""
    space = hostmem.space(space_name)
    if space.has(round_array(pair.key)):
        space.array(round_array(pair.key), code_arrays.code_words(pair.layer_size)).fill(0)


def host_memory_bytes(space_name: str) -> int:
    """RAM this host's arrays of a solve run hold now."""
    return hostmem.space(space_name).bytes_held()


def end_of_run(space_name: str) -> int:
    """Run on every worker when a solve ends (done or failed): its host memory goes."""
    forget_all(space_name)
    forget_all_counting(space_name)
    _SOURCES.drop(lambda key: key[0] == space_name)
    hostmem.space(space_name).remove()
    return 0


def host_memory_room(space_name: str) -> tuple[int | None, str]:
    """(bytes the host arrays' folder can still take, plus what this run holds
    there already; the folder): a container's /dev/shm can be far smaller than
    its memory."""
    if hostmem.is_private(space_name):
        return None, str(hostmem.root())  # the arrays are the process's memory, not the folder's
    return hostmem.free_bytes() + hostmem.space(space_name).bytes_held(), str(hostmem.root())


def host_ram_bytes() -> int:
    """This host's physical memory."""
    import psutil

    return int(psutil.virtual_memory().total)


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
    solved: dict[tuple[int, int], NDArray[np.uint64]] = {}
    for m in range(2 * (variant.win_kazan - 2), -1, -2):
        for a in variant.kazans:
            b = m - a
            if a <= b and b in variant.kazans:
                for method in (SWEEP, FRONTIER, COUNTING):
                    result = solve_pair(variant, a, b, solved, method=method)
                solved.update(result.codes)
    for layer, codes in solved.items():
        encode_layer(codes, variant.layer_size(*layer))
    # Tiny games may never reach a frontier round: compile that kernel directly,
    # and the ones that move a round's decisions, stamp distances and make
    # synthetic layers.
    state = PairState(variant, 0, 0, solved)
    fresh = code_arrays.new_codes(state.size)
    code_arrays.set_code(fresh, 0, code_arrays.WIN)
    state.frontier((0, 0), fresh, 0, 0, state.size)
    state.take((0, 0), 0, state.size, 0, clear=False)
    state.take((0, 0), 3, state.size, 0)
    state.clear((0, 0), 0, state.size)
    chunk = code_arrays.new_codes(37)
    code_arrays.set_code(chunk, 5, code_arrays.WIN)
    delta = Delta((0, 0), 0, 3, 40, dense=chunk, wins=1)
    delta.apply(code_arrays.new_codes(64))
    delta.sparse().apply(code_arrays.new_codes(64))
    for width in (1, 2):
        distances_from(variant, 4, 0, 64, [[delta, delta.sparse()]], width)
    code_arrays.synthetic_codes(
        code_arrays.new_codes(40), 40, np.uint64(1), np.uint64(2), np.uint64(1), np.uint64(2)
    )
    # And the counting kernels a large pair's host runs (hostcount.py).
    counts = counting.CountingState(variant, 0, 0, solved)
    counts.first_round((0, 0), 0, counts.size)
    counts.recount((0, 0), 0, counts.size)
    counts.walk((0, 0), fresh, 0, 0, counts.size)
    listed = np.zeros(1, np.int64)
    counts.walk((0, 0), fresh, 0, 0, counts.size, listed, np.ones(1, np.uint8), np.empty(4, np.int64))
    counts.listed_delta((0, 0), 0, counts.size, 0, listed)
    counting.mark(counts.states[(0, 0)], delta)
    counting.mark(counts.states[(0, 0)], delta.sparse())
    counts.codes_of((0, 0), 0, counts.size)
    return time.perf_counter() - start
