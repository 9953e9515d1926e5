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

import hashlib
import time
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
from .kernels import WINS_AT_ONCE, check_range, expected_of, list_moves

DEFAULT_CHUNK_SIZE = 1 << 23  # positions per chunk task
MAX_FAULTS = 20  # faults a chunk task (or a file check) reports in full
SAMPLE_CHUNK = 4096  # sampled positions per task
VALUE_NAMES = {code_arrays.WIN: "win", code_arrays.LOSS: "loss", 0: "draw"}


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
CACHE = OnceCache(worker_memory_budget, keep_newest=True)


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
                codes,
                dtz,
                codes,
                np.zeros(variant.win_kazan // 2 + 1, np.int64),
                variant.binom,
                True,
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
    dtz: NDArray[Any] | None  # 1 or 2 bytes a position
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
    spec: LayerSpec, kind: str, name: str, size: int, data: bytes | None, faults: list[dict[str, Any]]
) -> None:
    """Size (and, given the bytes, sha256) of a file against the manifest."""
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
    if data is not None:
        sha = (entry.get("sha256") or {}).get(kind)
        got = hashlib.sha256(data).hexdigest()
        if sha != got:
            faults.append(
                fault(
                    spec.layer,
                    "sha256",
                    f"{name}: sha256 {got[:16]}... does not match the manifest's {str(sha)[:16]}...",
                    file=name,
                )
            )


def load_layer(job: VerifyJob, spec: LayerSpec) -> LoadedLayer:
    """A layer's files read, checked against the manifest and decoded."""
    start = time.perf_counter()
    store = job.store()
    faults: list[dict[str, Any]] = []
    raw: dict[str, NDArray[np.uint8]] = {}
    sums = _sidecar(job, spec, faults)
    for kind in _kinds(spec):
        name = layer_file(spec.k1, spec.k2, kind)
        try:
            data = store.read_bytes(name)
        except StoreError as exc:
            faults.append(fault(spec.layer, "file", str(exc), file=name))
            continue
        _check_entry_file(spec, kind, name, len(data), data, faults)
        try:
            checks = None if sums is None else sums.of(kind, store_name(store, name))
            raw[kind] = fmt.decode_file(data, store_name(store, name), _bits(spec, kind), checks)
        except FormatError as exc:
            faults.append(fault(spec.layer, "format", str(exc), file=name))
    codes, counts, dtz, max_dtz, extra = None, None, None, None, 0
    if "win" in raw and "draw" in raw:
        both = np.bitwise_and(raw["win"], raw["draw"])
        marked = np.flatnonzero(both)
        if marked.size:
            ranks = [int(b) * 8 + bit for b in marked[:MAX_FAULTS] for bit in range(8) if both[b] >> bit & 1]
            total = int(np.unpackbits(both[marked]).sum())
            for r in ranks[:MAX_FAULTS]:
                faults.append(
                    fault(
                        spec.layer,
                        "both",
                        f"layer {spec.name} rank {r} is marked both win and draw.",
                        rank=r,
                        position=position_of(job.variant, spec, r),
                    )
                )
            extra = total - min(total, MAX_FAULTS)
        else:
            codes = codes_from_bitsets(raw["win"], raw["draw"], spec.positions, spec.k1, spec.k2)
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
    if "dtz" in raw:
        dtz = raw["dtz"].view(np.uint8 if spec.dtz_width == 1 else np.dtype("<u2"))
        max_dtz = int(dtz.max()) if dtz.shape[0] else 0
        recorded = ((spec.entry or {}).get("dtz") or {}).get("max")
        if recorded != max_dtz:
            faults.append(
                fault(
                    spec.layer,
                    "manifest",
                    f"layer {spec.name}: the largest distance is {max_dtz} but the manifest says {recorded}.",
                )
            )
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


def _distances(job: VerifyJob, spec: LayerSpec) -> NDArray[Any]:
    """A layer's distance table, as stored (1 or 2 bytes a position)."""

    def load() -> tuple[NDArray[Any], int]:
        raw = _reader(job).table(spec.k1, spec.k2, "dtz", _bits(spec, "dtz"))
        dtz = raw.view(np.uint8 if spec.dtz_width == 1 else np.dtype("<u2"))
        return dtz, dtz.nbytes

    return CACHE.get(("dtz", job.run, spec.layer), load)


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
    usable = loaded.codes is not None and (spec.dtz_width is None or loaded.dtz is not None)
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
    """The capture targets' codes end to end, as check_range reads them."""

    def load() -> tuple[tuple[NDArray[np.uint64], NDArray[np.int64]], int]:
        start = np.full(job.variant.win_kazan // 2 + 1, -1, np.int64)
        parts: list[NDArray[np.uint64]] = []
        words = 0
        for dep in deps:
            codes = _codes(job, dep)
            start[(dep.k2 - spec.k1) // 2 - 1] = 32 * words
            parts.append(codes)
            words += codes.shape[0]
        bundle = np.concatenate(parts) if parts else np.zeros(1, np.uint64)
        return (bundle, start), bundle.nbytes

    return CACHE.get(("bundle", job.run, spec.layer), load)


_NO_DTZ = np.zeros(1, np.uint8)


def verify_chunk_task(
    job: VerifyJob,
    spec: LayerSpec,
    partner: LayerSpec,
    deps: tuple[LayerSpec, ...],
    chunk: int,
    lo: int,
    hi: int,
) -> dict[str, Any]:
    """Check positions [lo, hi) of one layer against their children."""
    start, cpu = time.perf_counter(), time.thread_time()
    v = job.variant
    use_dtz = spec.dtz_width is not None and partner.dtz_width is not None
    own, other = _codes(job, spec), _codes(job, partner)
    own_dtz = _distances(job, spec) if use_dtz else _NO_DTZ
    other_dtz = _distances(job, partner) if use_dtz else _NO_DTZ
    bundle, dep_start = _bundle(job, spec, deps)
    loaded = time.perf_counter()
    fault_rank = np.zeros(MAX_FAULTS, np.int64)
    faults = np.zeros((MAX_FAULTS, 4), np.int64)
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
            other,
            other_dtz,
            bundle,
            dep_start,
            v.binom,
            use_dtz,
            fault_rank,
            faults,
        ),
    )
    found = [
        position_fault(
            v,
            spec,
            int(fault_rank[i]),
            int(faults[i, 0]),
            int(faults[i, 1]),
            int(faults[i, 2]),
            int(faults[i, 3]),
            use_dtz,
        )
        for i in range(recorded)
    ]
    return {
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
