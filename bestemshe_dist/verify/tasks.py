"""What `bestemshe-dist verify`'s workers run (driver.py submits it and reports).

Every position of every layer present is checked against its children's stored
values (kernels.py says how, and why a pass with distance tables is a
proof while a pass on win/draw/loss alone is only consistency). Independent of
the solver's propagation code: it shares the rules, the rank and the file format.

The driver only handles small things (layer specs, counts, at most MAX_FAULTS
faults per chunk); layer data moves from the store to the workers, which decode
each layer once (2 bits per position, plus its distance table) and share it
between their tasks:

- `verify-files-<k1>-<k2>-<run>`: the layer's files against the manifest (sizes,
  sha256, counts, largest distance), their headers and frames, no position
  marked both win and draw;
- `verify-<k1>-<k2>-chunk-<c>-<run>`: positions [lo, hi) of the layer (or, with
  --sample, some random ranks) against their children.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..data import format as fmt
from ..data.blocks import LayerReader
from ..data.cache import OnceCache, worker_memory_budget
from ..data.checksums import LayerSums
from ..data.layer_files import codes_from_bitsets
from ..data.store import Store, StoreJob
from ..errors import FormatError, StoreError
from ..game.rules import unrank
from ..game.variant import Variant
from ..naming import layer_file, layer_name, sums_file
from ..solve import code_arrays, kernels
from .kernels import WINS_AT_ONCE, check_distances_range, check_range, expected_of, list_moves

DEFAULT_CHUNK_SIZE = 1 << 23  # positions per chunk task
MAX_FAULTS = 20  # faults a chunk task (or a file check) reports in full
SAMPLE_CHUNK = 4096  # sampled positions per task
VALUE_NAMES = {code_arrays.WIN: "win", code_arrays.LOSS: "loss", 0: "draw"}
# How a chunk's positions are checked: in one pass, or (a layer whose capture
# targets and partner's distances do not fit a worker together) in two.
BOTH, VALUES, DISTANCES = "both", "values", "distances"


@dataclass(frozen=True)
class VerifyJob(StoreJob):
    """A verification's tasks: the store and variant, and the run their caches are keyed by."""

    run: str = ""


@dataclass(frozen=True)
class LayerSpec:
    k1: int
    k2: int
    positions: int
    entry: dict[str, Any] | None = field(compare=False)  # its manifest entry (None: none, or not in it)
    dtz_width: int | None  # bytes per distance, None when not checked

    @property
    def layer(self) -> tuple[int, int]:
        return (self.k1, self.k2)

    @property
    def name(self) -> str:
        return layer_name(self.k1, self.k2)


def fault(layer: tuple[int, int], kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"layer": layer_name(*layer), "kind": kind, "message": message, **extra}


# -- the worker side: a cache per process ----------------------------------------------
# Decoded layers, dependency bundles and a block reader per verify run; the least
# recently used dropped past the worker's budget, and a run's all at its end.
# Verify's tasks return little, so its cache may take more of a worker than the
# solver's (40%): the largest layer's distance pass holds 15.7 GB (the codes and
# distances of layer 0_0), 67% of a 24 GiB worker, under Dask's pause at 80%.
CACHE_SHARE = 0.7
CACHE = OnceCache(lambda: worker_memory_budget(CACHE_SHARE), keep_newest=True)


def forget_run(run: str) -> int:
    """Run on every worker at the end of a verify: drop what it cached."""
    return CACHE.drop(lambda key: key[1] == run)


def _reader(job: VerifyJob) -> LayerReader:
    """This run's reader on this worker: checksums and headers read once, blocks
    (for --sample) in an LRU of a quarter of the worker's budget."""

    def load() -> tuple[LayerReader, int]:
        store = job.store()
        return LayerReader(store, store.read_manifest(), worker_memory_budget() // 4, listed_only=False), 0

    return CACHE.get(("reader", job.run), load)


def warm_up(pits: int) -> float:
    """Compile (or load from numba's cache) the check kernel for this board size."""
    start = time.perf_counter()
    variant = Variant(4, pits)
    codes = code_arrays.new_codes(variant.layer_size(0, 0))
    for dtype in (np.uint8, np.uint16):
        dtz = np.zeros(variant.layer_size(0, 0), dtype)
        kernels.call_specialized(
            check_range,
            (
                pits,
                variant.win_kazan,
                0,
                4,
                0,
                3,
                codes,
                dtz,
                0,
                codes,
                dtz,
                codes,
                np.zeros(variant.win_kazan // 2 + 1, np.int64),
                variant.binom,
                True,
                np.zeros(1, np.uint8),
                np.zeros(1, np.int64),
                np.zeros((1, 4), np.int64),
            ),
        )
        kernels.call_specialized(
            check_distances_range,
            (
                pits,
                variant.win_kazan,
                0,
                4,
                0,
                3,
                codes,
                dtz,
                0,
                codes,
                dtz,
                variant.binom,
                np.zeros(1, np.uint8),
                np.zeros(0, np.int64),
                np.zeros(1, np.int64),
                np.zeros((1, 4), np.int64),
            ),
        )
    win = np.zeros(fmt.BLOCK_BYTES // 1024, np.uint8)
    code_arrays.count_codes(codes_from_bitsets(win, win, 8 * win.shape[0], 0, 0), 8 * win.shape[0])
    board = np.zeros(2 * pits, np.int64)
    unrank(1, 4, variant.binom, board)
    moves = np.zeros(pits, np.int64)
    count = list_moves(board, pits, variant.win_kazan, 0, variant.binom, moves, moves.copy())
    expected_of(count, moves, moves)
    return time.perf_counter() - start


@dataclass
class LoadedLayer:
    codes: NDArray[np.uint64] | None  # None: the files could not be decoded
    dtz: NDArray[Any] | None  # 1 or 2 bytes a position; None when large (or unreadable)
    faults: list[dict[str, Any]]
    fault_count: int
    counts: dict[str, int] | None
    max_dtz: int | None
    seconds: float


def _kinds(spec: LayerSpec) -> list[str]:
    return ["win", "draw"] + (["dtz"] if spec.dtz_width else [])


def _bits(spec: LayerSpec, kind: str) -> int:
    if kind == "dtz":
        assert spec.dtz_width is not None  # a layer's distances are read only given their width
        return 8 * spec.dtz_width * spec.positions
    return spec.positions


def _check_entry_file(
    spec: LayerSpec, kind: str, name: str, size: int, sha: str | None, faults: list[dict[str, Any]]
) -> None:
    """Size (and, given the file's sha256, that) of a file against the manifest."""
    entry = spec.entry
    if entry is None:
        return
    want = (entry.get("bytes") or {}).get(kind)
    if want is None:
        faults.append(
            fault(spec.layer, "manifest", f"{name}: the manifest records no size for it.", file=name)
        )
    elif want != size:
        faults.append(
            fault(spec.layer, "size", f"{name}: {size} bytes but the manifest says {want}.", file=name)
        )
    if sha is not None:
        recorded = (entry.get("sha256") or {}).get(kind)
        if recorded != sha:
            faults.append(
                fault(
                    spec.layer,
                    "sha256",
                    f"{name}: sha256 {sha[:16]}... does not match the manifest's {str(recorded)[:16]}...",
                    file=name,
                )
            )


# A layer's distance table is kept whole by its file check (for its chunks)
# up to this size; a larger one is read again a chunk's slice at a time.
KEEP_DISTANCES_BYTES = 64 << 20


class _Stream:
    """One file of a layer read block by block (format.stream_blocks), its size
    and sha256 checked against the manifest at the end; a fault ends it."""

    def __init__(self, job: VerifyJob, spec: LayerSpec, kind: str, sums: LayerSums | None) -> None:
        self.job, self.spec, self.kind, self.sums = job, spec, kind, sums
        self.name = layer_file(spec.k1, spec.k2, kind)

    def blocks(self, faults: list[dict[str, Any]]) -> Iterator[tuple[int, bytes]]:
        store = self.job.store()
        shown = store_name(store, self.name)
        try:
            size = store.size(self.name)
            checks = None if self.sums is None else self.sums.of(self.kind, shown)
            hasher = hashlib.sha256()
            read = functools.partial(store.read_range, self.name)
            yield from fmt.stream_blocks(read, size, shown, _bits(self.spec, self.kind), checks, hasher)
        except StoreError as exc:
            faults.append(fault(self.spec.layer, "file", str(exc), file=self.name))
            raise _Unusable from None
        except FormatError as exc:
            _check_entry_file(self.spec, self.kind, self.name, size, None, faults)
            faults.append(fault(self.spec.layer, "format", str(exc), file=self.name))
            raise _Unusable from None
        _check_entry_file(self.spec, self.kind, self.name, size, hasher.hexdigest(), faults)


class _Unusable(Exception):
    """A file could not be read or decoded (its fault is recorded)."""


def load_layer(job: VerifyJob, spec: LayerSpec) -> LoadedLayer:
    """A layer's files read, checked against the manifest and decoded a block at a
    time: its codes whole (2 bits a position), its distance table whole only when
    small, the largest distance either way."""
    start = time.perf_counter()
    faults: list[dict[str, Any]] = []
    sums = _sidecar(job, spec, faults)
    codes, counts, dtz, max_dtz, extra = None, None, None, None, 0
    win = np.zeros(fmt.bitset_bytes(spec.positions), np.uint8)
    try:
        for b, raw in _Stream(job, spec, "win", sums).blocks(faults):
            win[b * fmt.BLOCK_BYTES : b * fmt.BLOCK_BYTES + len(raw)] = np.frombuffer(raw, np.uint8)
        ok = True
    except _Unusable:
        ok = False
    try:
        codes = code_arrays.new_codes(spec.positions) if ok else None
        clashes: list[int] = []
        total = 0
        words = fmt.BLOCK_BITS // 32
        for b, raw in _Stream(job, spec, "draw", sums).blocks(faults):
            if codes is None:
                continue  # the win file failed: the draw file is still checked
            at = b * fmt.BLOCK_BYTES
            draw = np.frombuffer(raw, np.uint8)
            both = np.bitwise_and(win[at : at + len(raw)], draw)
            marked = np.flatnonzero(both)
            if marked.size:
                total += int(np.unpackbits(both[marked]).sum())
                clashes += [
                    (at + int(i)) * 8 + bit
                    for i in marked[:MAX_FAULTS]
                    for bit in range(8)
                    if both[i] >> bit & 1
                ][: MAX_FAULTS - len(clashes)]
                continue
            part = codes[b * words : min((b + 1) * words, codes.shape[0])]
            codes_from_bitsets(
                win[at : at + len(raw)], draw, spec.positions, spec.k1, spec.k2, part, b * words
            )
        if clashes:
            for r in clashes:
                faults.append(
                    fault(
                        spec.layer,
                        "both",
                        f"layer {spec.name} rank {r} is marked both win and draw.",
                        rank=r,
                        position=position_of(job.variant, spec, r),
                    )
                )
            extra = total - len(clashes)
            codes = None
    except _Unusable:
        codes = None
    del win
    if codes is not None:
        wins, losses, draws = (int(c) for c in code_arrays.count_codes(codes, spec.positions))
        counts = {"win": wins, "draw": draws, "loss": losses}
        recorded = (spec.entry or {}).get("counts")
        if spec.entry is not None and recorded != counts:
            faults.append(
                fault(
                    spec.layer,
                    "counts",
                    f"layer {spec.name} holds win {wins:,} draw {draws:,} "
                    f"loss {losses:,} but the manifest says {_counts(recorded)}.",
                )
            )
    if spec.dtz_width:
        dtype = np.uint8 if spec.dtz_width == 1 else np.dtype("<u2")
        keep = spec.positions * spec.dtz_width <= KEEP_DISTANCES_BYTES
        whole = np.zeros(spec.positions, dtype) if keep else None
        try:
            largest = 0
            for b, raw in _Stream(job, spec, "dtz", sums).blocks(faults):
                block = np.frombuffer(raw, dtype)
                if block.shape[0]:
                    largest = max(largest, int(block.max()))
                if whole is not None:
                    first = b * (fmt.BLOCK_BYTES // spec.dtz_width)
                    whole[first : first + block.shape[0]] = block
            dtz, max_dtz = whole, largest
            recorded = ((spec.entry or {}).get("dtz") or {}).get("max")
            if recorded != max_dtz:
                faults.append(
                    fault(
                        spec.layer,
                        "manifest",
                        f"layer {spec.name}: the largest distance is {max_dtz} but the manifest says {recorded}.",
                    )
                )
        except _Unusable:
            pass
    return LoadedLayer(codes, dtz, faults, len(faults) + extra, counts, max_dtz, time.perf_counter() - start)


def store_name(store: Store, name: str) -> str:
    return f"{store.shown}/{name}"


def _sidecar(job: VerifyJob, spec: LayerSpec, faults: list[dict[str, Any]]) -> LayerSums | None:
    """The layer's checksums (None without them), checked against the manifest's
    record of them; a missing or damaged sidecar the manifest records is a fault."""
    store = job.store()
    name = sums_file(spec.k1, spec.k2)
    record = (spec.entry or {}).get("checksums")
    try:
        data = store.read_optional(name)
        if data is None:
            if record:
                faults.append(
                    fault(
                        spec.layer,
                        "checksums",
                        f"{store_name(store, name)} is missing, but the "
                        f"manifest records checksums for layer {spec.name}.",
                        file=name,
                    )
                )
            return None
        if record and hashlib.sha256(data).hexdigest() != record.get("sha256"):
            faults.append(
                fault(
                    spec.layer,
                    "checksums",
                    f"{store_name(store, name)}: sha256 does not match the manifest's record of it.",
                    file=name,
                )
            )
        return LayerSums.from_bytes(data, spec.layer, store_name(store, name))
    except (StoreError, FormatError) as exc:
        faults.append(fault(spec.layer, "checksums", str(exc), file=name))
        return None


def _counts(recorded: object) -> str:
    if not isinstance(recorded, dict):
        return "nothing"
    return " ".join(
        f"{k} {recorded.get(k, '?'):,}" if isinstance(recorded.get(k), int) else f"{k} ?"
        for k in ("win", "draw", "loss")
    )


def _codes(job: VerifyJob, spec: LayerSpec) -> NDArray[np.uint64]:
    """A layer's 2-bit codes (its files were checked by its verify-files task)."""

    def load() -> tuple[NDArray[np.uint64], int]:
        codes = _reader(job).codes(spec.k1, spec.k2, spec.positions)
        return codes, codes.nbytes

    return CACHE.get(("codes", job.run, spec.layer), load)


def _dtype(spec: LayerSpec) -> np.dtype[Any]:
    return np.dtype(np.uint8) if spec.dtz_width == 1 else np.dtype("<u2")


def _distances(job: VerifyJob, spec: LayerSpec) -> NDArray[Any]:
    """A layer's whole distance table, as stored (1 or 2 bytes a position),
    decoded a block at a time into it."""

    def load() -> tuple[NDArray[Any], int]:
        reader = _reader(job)
        name = layer_file(spec.k1, spec.k2, "dtz")
        table = np.empty(spec.positions, _dtype(spec))
        raw = table.view(np.uint8)
        read = functools.partial(reader.store.read_range, name)
        size = reader.store.size(name)
        checks = reader.file_sums(spec.k1, spec.k2, "dtz")
        for b, block in fmt.stream_blocks(read, size, reader.shown(name), _bits(spec, "dtz"), checks):
            raw[b * fmt.BLOCK_BYTES : b * fmt.BLOCK_BYTES + len(block)] = np.frombuffer(block, np.uint8)
        return table, table.nbytes

    return CACHE.get(("dtz", job.run, spec.layer), load)


def _own_distances(job: VerifyJob, spec: LayerSpec, lo: int, hi: int) -> tuple[NDArray[Any], int]:
    """The distances of positions [lo, hi) of a layer, with the rank of the first
    one given: the whole table where this worker holds it, else the blocks that
    hold the chunk (a chunk reads its own distances in order, once)."""
    whole = CACHE.peek(("dtz", job.run, spec.layer))
    if whole is not None:
        return whole, 0
    assert spec.dtz_width is not None  # asked for only where the layer has distances
    per_block = fmt.BLOCK_BYTES // spec.dtz_width
    first, last = lo // per_block, (hi - 1) // per_block
    reader = _reader(job)
    nbits = _bits(spec, "dtz")
    parts = [
        np.frombuffer(reader.read_block(spec.k1, spec.k2, "dtz", nbits, b), _dtype(spec))
        for b in range(first, last + 1)
    ]
    return np.concatenate(parts), first * per_block


def position_of(variant: Variant, spec: LayerSpec, rank: int) -> list[int]:
    board = np.empty(variant.board, np.int64)
    unrank(rank, variant.board_stones(spec.k1, spec.k2), variant.binom, board)
    return [int(b) for b in board]


def verify_files_task(job: VerifyJob, spec: LayerSpec, sample: bool = False) -> dict[str, Any]:
    """The file-level checks of one layer (in full mode the decoded layer stays in
    this worker's cache for the chunk tasks)."""
    cpu = time.thread_time()
    if sample:
        faults, usable, _ = _check_headers(job, spec)
        return {
            "layer": spec.layer,
            "usable": usable,
            "faults": faults,
            "fault_count": len(faults),
            "counts": None,
            "max_dtz": None,
            "cpu_seconds": time.thread_time() - cpu,
        }
    loaded = load_layer(job, spec)
    usable = loaded.codes is not None and (spec.dtz_width is None or loaded.max_dtz is not None)
    # Keep what was decoded for this worker's chunk tasks; dependency layers
    # only need their codes, so the two are kept apart.
    if loaded.codes is not None:
        CACHE.put(("codes", job.run, spec.layer), loaded.codes, loaded.codes.nbytes)
    if loaded.dtz is not None:
        CACHE.put(("dtz", job.run, spec.layer), loaded.dtz, loaded.dtz.nbytes)
    return {
        "layer": spec.layer,
        "usable": usable,
        "faults": loaded.faults,
        "fault_count": loaded.fault_count,
        "counts": loaded.counts,
        "max_dtz": loaded.max_dtz,
        "cpu_seconds": time.thread_time() - cpu,
    }


def _bundle(
    job: VerifyJob, spec: LayerSpec, deps: tuple[LayerSpec, ...]
) -> tuple[NDArray[np.uint64], NDArray[np.int64]]:
    """The capture targets' codes end to end, as check_range reads them: each
    copied from this worker's cache where it holds it, else decoded straight into
    its place (the targets of a large layer are GBs: never held twice)."""

    def load() -> tuple[tuple[NDArray[np.uint64], NDArray[np.int64]], int]:
        start = np.full(job.variant.win_kazan // 2 + 1, -1, np.int64)
        sizes = [code_arrays.code_words(dep.positions) for dep in deps]
        bundle = np.empty(max(1, sum(sizes)), np.uint64)
        words = 0
        for dep, size in zip(deps, sizes, strict=True):
            start[(dep.k2 - spec.k1) // 2 - 1] = 32 * words
            part = bundle[words : words + size]
            held = CACHE.peek(("codes", job.run, dep.layer))
            if held is not None:
                part[:] = held
            else:
                _reader(job).codes(dep.k1, dep.k2, dep.positions, out=part)
            words += size
        return (bundle, start), bundle.nbytes

    return CACHE.get(("bundle", job.run, spec.layer), load)


def bundle_bytes(spec: LayerSpec, deps: tuple[LayerSpec, ...]) -> int:
    return 8 * max(1, sum(code_arrays.code_words(dep.positions) for dep in deps))


def check_bytes(
    spec: LayerSpec, partner: LayerSpec, deps: tuple[LayerSpec, ...], use_dtz: bool, passes: str = BOTH
) -> int:
    """Bytes a worker holds to check a layer's positions in `passes`: its codes,
    its partner's codes, and the capture targets' codes (not in the distance
    pass) or the partner's distances (not in the values pass), or both."""
    held = 8 * code_arrays.code_words(spec.positions)
    if partner.layer != spec.layer:
        held += 8 * code_arrays.code_words(partner.positions)
    if passes != DISTANCES:
        held += bundle_bytes(spec, deps)
    if use_dtz and passes != VALUES and partner.dtz_width:
        held += partner.positions * partner.dtz_width
    return held


_NO_DTZ = np.zeros(1, np.uint8)
_NO_EXITS = np.zeros(0, np.uint8)
# Ranks of wrong values a values pass hands to its distance pass (which leaves
# them out); a chunk with more has its distances reported as not checked.
SKIP_RANKS = 1 << 16


def verify_chunk_task(
    job: VerifyJob,
    spec: LayerSpec,
    partner: LayerSpec,
    deps: tuple[LayerSpec, ...],
    chunk: int,
    lo: int,
    hi: int,
    passes: str = BOTH,
    gate: object = None,
) -> dict[str, Any]:
    """Check positions [lo, hi) of one layer against their children: values and
    distances (BOTH), or the values alone, with what the distance pass needs
    (VALUES). `gate`: a task this one waits for (the driver's order of large
    layers), unused."""
    start, cpu = time.perf_counter(), time.thread_time()
    v = job.variant
    use_dtz = passes == BOTH and spec.dtz_width is not None and partner.dtz_width is not None
    own, other = _codes(job, spec), _codes(job, partner)
    own_dtz, own_dtz_lo = _own_distances(job, spec, lo, hi) if use_dtz else (_NO_DTZ, 0)
    other_dtz = _distances(job, partner) if use_dtz else _NO_DTZ
    bundle, dep_start = _bundle(job, spec, deps)
    loaded = time.perf_counter()
    exits = np.zeros((hi - lo + 7) // 8, np.uint8) if passes == VALUES else _NO_EXITS
    fault_rank = np.zeros(SKIP_RANKS if passes == VALUES else MAX_FAULTS, np.int64)
    faults = np.zeros((fault_rank.shape[0], 4), np.int64)
    wins, draws, losses, value_faults, dtz_faults, max_dtz, recorded = kernels.call_specialized(
        check_range,
        (
            v.pits,
            v.win_kazan,
            spec.k1,
            v.board_stones(spec.k1, spec.k2),
            lo,
            hi,
            own,
            own_dtz,
            own_dtz_lo,
            other,
            other_dtz,
            bundle,
            dep_start,
            v.binom,
            use_dtz,
            exits,
            fault_rank,
            faults,
        ),
    )
    found = kernel_faults(v, spec, fault_rank, faults, min(recorded, MAX_FAULTS), use_dtz)
    result = {
        "layer": spec.layer,
        "chunk": chunk,
        "positions": hi - lo,
        "counts": {"win": int(wins), "draw": int(draws), "loss": int(losses)},
        "value_faults": int(value_faults),
        "dtz_faults": int(dtz_faults),
        "max_dtz": int(max_dtz),
        "faults": found,
        "seconds": time.perf_counter() - start,
        "load_seconds": loaded - start,
        "cpu_seconds": time.thread_time() - cpu,
    }
    if passes == VALUES:
        result["exits"] = exits
        result["skip"] = fault_rank[:recorded].copy() if value_faults <= SKIP_RANKS else None
        result["bounds"] = (lo, hi)
    return result


def verify_distances_task(
    job: VerifyJob, spec: LayerSpec, partner: LayerSpec, first: dict[str, Any], gate: object = None
) -> dict[str, Any]:
    """The distance pass of a chunk whose values `first` (verify_chunk_task's
    VALUES result) checked: its result with the distances' faults added. The
    capture targets' codes are no longer needed on this worker: dropped first."""
    start, cpu = time.perf_counter(), time.thread_time()
    CACHE.drop(lambda key: key[0] == "bundle" and key[1] == job.run)
    result = {k: value for k, value in first.items() if k not in ("exits", "skip", "bounds")}
    result["faults"] = list(first["faults"])
    lo, hi = first["bounds"]
    if first["skip"] is None:
        result["faults"].append(
            fault(
                spec.layer,
                "dtz",
                f"layer {spec.name} positions {lo:,} to {hi - 1:,}: the distances are not "
                f"checked, more than {SKIP_RANKS:,} of their values are wrong.",
            )
        )
        result["dtz_faults"] = 1
        return result
    v = job.variant
    own, other = _codes(job, spec), _codes(job, partner)
    own_dtz, own_dtz_lo = _own_distances(job, spec, lo, hi)
    other_dtz = _distances(job, partner)
    loaded = time.perf_counter()
    fault_rank = np.zeros(MAX_FAULTS, np.int64)
    faults = np.zeros((MAX_FAULTS, 4), np.int64)
    dtz_faults, max_dtz, recorded = kernels.call_specialized(
        check_distances_range,
        (
            v.pits,
            v.win_kazan,
            spec.k1,
            v.board_stones(spec.k1, spec.k2),
            lo,
            hi,
            own,
            own_dtz,
            own_dtz_lo,
            other,
            other_dtz,
            v.binom,
            first["exits"],
            first["skip"],
            fault_rank,
            faults,
        ),
    )
    room = max(0, MAX_FAULTS - len(result["faults"]))
    result["faults"] += kernel_faults(v, spec, fault_rank, faults, min(recorded, room), True)
    result["dtz_faults"] = int(dtz_faults)
    result["max_dtz"] = int(max_dtz)
    result["seconds"] += time.perf_counter() - start
    result["load_seconds"] += loaded - start
    result["cpu_seconds"] += time.thread_time() - cpu
    return result


def gate_task(*done: object) -> None:
    """Nothing: a task that ends when the tasks given to it have (the driver's
    order between large layers)."""


def kernel_faults(
    variant: Variant,
    spec: LayerSpec,
    fault_rank: NDArray[np.int64],
    faults: NDArray[np.int64],
    count: int,
    use_dtz: bool,
) -> list[dict[str, Any]]:
    """The first `count` faults a check kernel recorded (FAULT_COLUMNS), as reported."""
    rows = [[int(c) for c in faults[i]] for i in range(count)]
    return [
        position_fault(variant, spec, int(fault_rank[i]), value, want, dtz, want_dtz, use_dtz)
        for i, (value, want, dtz, want_dtz) in enumerate(rows)
    ]


def position_fault(
    variant: Variant,
    spec: LayerSpec,
    rank: int,
    value: int,
    want: int,
    dtz: int,
    want_dtz: int,
    use_dtz: bool,
) -> dict[str, Any]:
    stored: dict[str, Any] = {"value": VALUE_NAMES[value]}
    expected: dict[str, Any] = {"value": VALUE_NAMES[want]}
    if use_dtz:
        stored["dtz"], expected["dtz"] = dtz, want_dtz
    kind = "value" if value != want else "dtz"
    board = position_of(variant, spec, rank)
    message = (
        f"layer {spec.name} rank {rank} position {show_board(board, variant.pits)}: "
        f"stored {_show(stored)}, expected {_show(expected)}."
    )
    return fault(spec.layer, kind, message, rank=rank, position=board, stored=stored, expected=expected)


def show_board(board: list[int], pits: int) -> str:
    return "[" + " ".join(map(str, board[:pits])) + " | " + " ".join(map(str, board[pits:])) + "]"


def _show(value: dict[str, Any]) -> str:
    return value["value"].upper() + (f" dtz {value['dtz']}" if "dtz" in value else "")


# -- sampled positions: only the blocks they need ----------------------------------------
def _check_headers(job: VerifyJob, spec: LayerSpec) -> tuple[list[dict[str, Any]], bool, float]:
    """--sample's file checks: each header (against its checksums) and size."""
    start = time.perf_counter()
    faults: list[dict[str, Any]] = []
    usable = True
    reader = _reader(job)
    for kind in _kinds(spec):
        name = layer_file(spec.k1, spec.k2, kind)
        try:
            size = reader.store.size(name)  # the file's own size, not the one recorded
            reader.header(spec.k1, spec.k2, kind, _bits(spec, kind))
        except (StoreError, FormatError) as exc:
            faults.append(
                fault(spec.layer, "file" if isinstance(exc, StoreError) else "format", str(exc), file=name)
            )
            usable = False
            continue
        _check_entry_file(spec, kind, name, size, None, faults)
    return faults, usable, time.perf_counter() - start


def _stored(job: VerifyJob, spec: LayerSpec, rank: int, with_dtz: bool) -> tuple[int, int]:
    """(code, distance) of one position read from its blocks; _Both if both bits."""
    reader = _reader(job)
    win = reader.bit(spec.k1, spec.k2, "win", spec.positions, rank)
    draw = reader.bit(spec.k1, spec.k2, "draw", spec.positions, rank)
    if win and draw:
        raise _Both(spec, rank)
    code = code_arrays.WIN if win else (0 if draw else code_arrays.LOSS)
    dtz = 0
    if with_dtz:
        assert spec.dtz_width is not None  # distances are asked for only where both layers have them
        dtz = reader.distance(spec.k1, spec.k2, spec.dtz_width, spec.positions, rank)
    return code, dtz


class _Both(Exception):
    def __init__(self, spec: LayerSpec, rank: int) -> None:
        self.spec, self.rank = spec, rank


def verify_sample_task(
    job: VerifyJob,
    spec: LayerSpec,
    partner: LayerSpec,
    deps: tuple[LayerSpec, ...],
    chunk: int,
    ranks: NDArray[np.int64],
) -> dict[str, Any]:
    """Check the given positions of one layer, reading only the blocks they touch."""
    start, cpu = time.perf_counter(), time.thread_time()
    v = job.variant
    use_dtz = spec.dtz_width is not None and partner.dtz_width is not None
    dep_of = {dep.k2 - spec.k1: dep for dep in deps}
    stones = v.board_stones(spec.k1, spec.k2)
    board = np.empty(v.board, np.int64)
    captured = np.empty(v.pits, np.int64)
    child = np.empty(v.pits, np.int64)
    child_value = np.empty(v.pits, np.int64)
    child_dtz = np.empty(v.pits, np.int64)
    counts = {"win": 0, "draw": 0, "loss": 0}
    found: list[dict[str, Any]] = []
    value_faults, dtz_faults, max_dtz = 0, 0, 0
    for x in (int(r) for r in ranks):
        try:
            unrank(x, stones, v.binom, board)
            count = list_moves(board, v.pits, v.win_kazan, spec.k1, v.binom, captured, child)
            for i in range(count):
                c = int(captured[i])
                if c == WINS_AT_ONCE:
                    child_value[i], child_dtz[i] = code_arrays.LOSS, 0
                elif c == 0:
                    child_value[i], child_dtz[i] = _stored(job, partner, int(child[i]), use_dtz)
                else:
                    child_value[i], child_dtz[i] = _stored(job, dep_of[c], int(child[i]), False)[0], 0
            want, want_dtz = expected_of(count, child_value, child_dtz)
            value, dtz = _stored(job, spec, x, use_dtz)
        except (StoreError, FormatError) as exc:  # a block that cannot be read
            value_faults += 1
            if len(found) < MAX_FAULTS and all(f["message"] != str(exc) for f in found):
                found.append(fault(spec.layer, "format", str(exc)))
            continue
        except _Both as both:
            value_faults += 1
            if len(found) < MAX_FAULTS:
                found.append(
                    fault(
                        both.spec.layer,
                        "both",
                        f"layer {both.spec.name} rank {both.rank} is marked both win and draw.",
                        rank=both.rank,
                        position=position_of(v, both.spec, both.rank),
                    )
                )
            continue
        counts[VALUE_NAMES[value]] += 1
        max_dtz = max(max_dtz, dtz)
        if value != want or (use_dtz and dtz != want_dtz):
            if value != want:
                value_faults += 1
            else:
                dtz_faults += 1
            if len(found) < MAX_FAULTS:
                found.append(position_fault(v, spec, x, value, int(want), dtz, int(want_dtz), use_dtz))
    return {
        "layer": spec.layer,
        "chunk": chunk,
        "positions": len(ranks),
        "counts": counts,
        "value_faults": value_faults,
        "dtz_faults": dtz_faults,
        "max_dtz": max_dtz,
        "faults": found,
        "seconds": time.perf_counter() - start,
        "load_seconds": 0.0,
        "cpu_seconds": time.thread_time() - cpu,
    }


# -- the driver ---------------------------------------------------------------------------
