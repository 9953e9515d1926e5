"""`bestemshe-dist verify`: check a tablebase position by position, on Dask workers.

Every position of every layer present is checked against its children's stored
values (verify_kernels.py says how, and why a pass with distance tables is a
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
import secrets
import time
import uuid
from dataclasses import dataclass, field

import numpy as np
from distributed.scheduler import KilledWorker

from ..data import format as fmt
from ..data.blocks import LayerReader
from ..data.cache import OnceCache, worker_memory_budget
from ..data.checksums import LayerSums
from ..data.layer_files import codes_from_bitsets
from ..data.store import Store, StoreJob, find_tablebase, no_tablebase
from ..errors import BestemsheError, FormatError, StoreError, UsageError
from ..game.geometry import capture_targets
from ..game.rules import unrank
from ..game.variant import Variant
from ..naming import layer_file, layer_name, parse_layer_file, parse_layer_name, sums_file, verify_files_key, verify_key
from ..solve import kernels
from .kernels import WINS_AT_ONCE, check_range, expected_of, list_moves

DEFAULT_CHUNK_SIZE = 1 << 23     # positions per chunk task
MAX_FAULTS = 20                  # faults a chunk task (or a file check) reports in full
SAMPLE_CHUNK = 4096              # sampled positions per task
VALUE_NAMES = {kernels.WIN: "win", kernels.LOSS: "loss", 0: "draw"}


@dataclass(frozen=True)
class VerifyJob(StoreJob):
    """A verification's tasks: the store and variant, and the run their caches are keyed by."""
    run: str = ""


@dataclass(frozen=True)
class LayerSpec:
    k1: int
    k2: int
    positions: int
    entry: dict | None = field(compare=False)  # its manifest entry (None: none, or not in it)
    dtz_width: int | None        # bytes per distance, None when not checked

    @property
    def layer(self) -> tuple:
        return (self.k1, self.k2)

    @property
    def name(self) -> str:
        return layer_name(self.k1, self.k2)


def fault(layer, kind: str, message: str, **extra) -> dict:
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
    def load():
        store = job.store()
        return LayerReader(store, store.read_manifest(), worker_memory_budget() // 4, listed_only=False), 0
    return CACHE.get(("reader", job.run), load)


def warm_up(pits: int) -> float:
    """Compile (or load from numba's cache) the check kernel for this board size."""
    start = time.perf_counter()
    variant = Variant(4, pits)
    codes = kernels.new_codes(variant.layer_size(0, 0))
    for dtype in (np.uint8, np.uint16):
        dtz = np.zeros(variant.layer_size(0, 0), dtype)
        kernels.call_specialized(check_range, (
            pits, variant.win_kazan, 0, 4, 0, 3, codes, dtz, codes, dtz, codes,
            np.zeros(variant.win_kazan // 2 + 1, np.int64), variant.binom, True,
            np.zeros(1, np.int64), np.zeros((1, 4), np.int64)))
    win = np.zeros(fmt.BLOCK_BYTES // 1024, np.uint8)
    kernels.count_codes(codes_from_bitsets(win, win, 8 * win.shape[0], 0, 0), 8 * win.shape[0])
    board = np.zeros(2 * pits, np.int64)
    unrank(1, 4, variant.binom, board)
    moves = np.zeros(pits, np.int64)
    count = list_moves(board, pits, variant.win_kazan, 0, variant.binom, moves, moves.copy())
    expected_of(count, moves, moves)
    return time.perf_counter() - start


@dataclass
class LoadedLayer:
    codes: np.ndarray | None     # None: the files could not be decoded
    dtz: np.ndarray | None
    faults: list
    fault_count: int
    counts: dict | None
    max_dtz: int | None
    seconds: float


def _kinds(spec: LayerSpec) -> list:
    return ["win", "draw"] + (["dtz"] if spec.dtz_width else [])


def _bits(spec: LayerSpec, kind: str) -> int:
    return 8 * spec.dtz_width * spec.positions if kind == "dtz" else spec.positions


def _check_entry_file(spec: LayerSpec, kind: str, name: str, size: int, data: bytes | None, faults: list):
    """Size (and, given the bytes, sha256) of a file against the manifest."""
    entry = spec.entry
    if entry is None:
        return
    want = (entry.get("bytes") or {}).get(kind)
    if want is None:
        faults.append(fault(spec.layer, "manifest", f"{name}: the manifest records no size for it.", file=name))
    elif want != size:
        faults.append(fault(spec.layer, "size", f"{name}: {size} bytes but the manifest says {want}.",
                            file=name))
    if data is not None:
        sha = (entry.get("sha256") or {}).get(kind)
        got = hashlib.sha256(data).hexdigest()
        if sha != got:
            faults.append(fault(spec.layer, "sha256", f"{name}: sha256 {got[:16]}... does not match the "
                                f"manifest's {str(sha)[:16]}...", file=name))


def load_layer(job: VerifyJob, spec: LayerSpec) -> LoadedLayer:
    """A layer's files read, checked against the manifest and decoded."""
    start = time.perf_counter()
    store = job.store()
    faults: list = []
    raw = {}
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
                faults.append(fault(spec.layer, "both", f"layer {spec.name} rank {r} is marked both win and draw.",
                                    rank=r, position=position_of(job.variant, spec, r)))
            extra = total - min(total, MAX_FAULTS)
        else:
            codes = codes_from_bitsets(raw["win"], raw["draw"], spec.positions, spec.k1, spec.k2)
            wins, losses, draws = (int(c) for c in kernels.count_codes(codes, spec.positions))
            counts = {"win": wins, "draw": draws, "loss": losses}
            recorded = (spec.entry or {}).get("counts")
            if spec.entry is not None and recorded != counts:
                faults.append(fault(spec.layer, "counts", f"layer {spec.name} holds win {wins:,} draw {draws:,} "
                                    f"loss {losses:,} but the manifest says {_counts(recorded)}."))
    if "dtz" in raw:
        dtz = raw["dtz"].view(np.uint8 if spec.dtz_width == 1 else np.dtype("<u2"))
        max_dtz = int(dtz.max()) if dtz.shape[0] else 0
        recorded = ((spec.entry or {}).get("dtz") or {}).get("max")
        if recorded != max_dtz:
            faults.append(fault(spec.layer, "manifest", f"layer {spec.name}: the largest distance is {max_dtz} "
                                f"but the manifest says {recorded}."))
    return LoadedLayer(codes, dtz, faults, len(faults) + extra, counts, max_dtz, time.perf_counter() - start)


def store_name(store: Store, name: str) -> str:
    return f"{store.shown}/{name}"


def _sidecar(job: VerifyJob, spec: LayerSpec, faults: list):
    """The layer's checksums (None without them), checked against the manifest's
    record of them; a missing or damaged sidecar the manifest records is a fault."""
    store = job.store()
    name = sums_file(spec.k1, spec.k2)
    record = (spec.entry or {}).get("checksums")
    try:
        data = store.read_optional(name)
        if data is None:
            if record:
                faults.append(fault(spec.layer, "checksums", f"{store_name(store, name)} is missing, but the "
                                    f"manifest records checksums for layer {spec.name}.", file=name))
            return None
        if record and hashlib.sha256(data).hexdigest() != record.get("sha256"):
            faults.append(fault(spec.layer, "checksums", f"{store_name(store, name)}: sha256 does not match "
                                "the manifest's record of it.", file=name))
        return LayerSums.from_bytes(data, spec.layer, store_name(store, name))
    except (StoreError, FormatError) as exc:
        faults.append(fault(spec.layer, "checksums", str(exc), file=name))
        return None


def _counts(recorded) -> str:
    if not isinstance(recorded, dict):
        return "nothing"
    return " ".join(f"{k} {recorded.get(k, '?'):,}" if isinstance(recorded.get(k), int) else f"{k} ?"
                    for k in ("win", "draw", "loss"))


def _codes(job: VerifyJob, spec: LayerSpec) -> np.ndarray:
    """A layer's 2-bit codes (its files were checked by its verify-files task)."""
    def load():
        codes = _reader(job).codes(spec.k1, spec.k2, spec.positions)
        return codes, codes.nbytes
    return CACHE.get(("codes", job.run, spec.layer), load)


def _distances(job: VerifyJob, spec: LayerSpec) -> np.ndarray:
    """A layer's distance table, as stored (1 or 2 bytes a position)."""
    def load():
        raw = _reader(job).table(spec.k1, spec.k2, "dtz", _bits(spec, "dtz"))
        dtz = raw.view(np.uint8 if spec.dtz_width == 1 else np.dtype("<u2"))
        return dtz, dtz.nbytes
    return CACHE.get(("dtz", job.run, spec.layer), load)


def position_of(variant: Variant, spec: LayerSpec, rank: int) -> list:
    board = np.empty(variant.board, np.int64)
    unrank(rank, variant.board_stones(spec.k1, spec.k2), variant.binom, board)
    return [int(b) for b in board]


def verify_files_task(job: VerifyJob, spec: LayerSpec, sample: bool = False) -> dict:
    """The file-level checks of one layer (in full mode the decoded layer stays in
    this worker's cache for the chunk tasks)."""
    cpu = time.thread_time()
    if sample:
        faults, usable, _ = _check_headers(job, spec)
        return {"layer": spec.layer, "usable": usable, "faults": faults, "fault_count": len(faults),
                "counts": None, "max_dtz": None, "cpu_seconds": time.thread_time() - cpu}
    loaded = load_layer(job, spec)
    usable = loaded.codes is not None and (spec.dtz_width is None or loaded.dtz is not None)
    # Keep what was decoded for this worker's chunk tasks; dependency layers
    # only need their codes, so the two are kept apart.
    if loaded.codes is not None:
        CACHE.put(("codes", job.run, spec.layer), loaded.codes, loaded.codes.nbytes)
    if loaded.dtz is not None:
        CACHE.put(("dtz", job.run, spec.layer), loaded.dtz, loaded.dtz.nbytes)
    return {"layer": spec.layer, "usable": usable, "faults": loaded.faults, "fault_count": loaded.fault_count,
            "counts": loaded.counts, "max_dtz": loaded.max_dtz, "cpu_seconds": time.thread_time() - cpu}


def _bundle(job: VerifyJob, spec: LayerSpec, deps: tuple):
    """The capture targets' codes end to end, as check_range reads them."""
    def load():
        start = np.full(job.variant.win_kazan // 2 + 1, -1, np.int64)
        parts, words = [], 0
        for dep in deps:
            codes = _codes(job, dep)
            start[(dep.k2 - spec.k1) // 2 - 1] = 32 * words
            parts.append(codes)
            words += codes.shape[0]
        bundle = np.concatenate(parts) if parts else np.zeros(1, np.uint64)
        return (bundle, start), bundle.nbytes
    return CACHE.get(("bundle", job.run, spec.layer), load)


_NO_DTZ = np.zeros(1, np.uint8)


def verify_chunk_task(job: VerifyJob, spec: LayerSpec, partner: LayerSpec, deps: tuple, chunk: int,
                      lo: int, hi: int) -> dict:
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
    wins, draws, losses, value_faults, dtz_faults, max_dtz, recorded = kernels.call_specialized(check_range, (
        v.pits, v.win_kazan, spec.k1, v.board_stones(spec.k1, spec.k2), lo, hi,
        own, own_dtz, other, other_dtz, bundle, dep_start, v.binom, use_dtz, fault_rank, faults))
    found = [position_fault(v, spec, int(fault_rank[i]), *(int(x) for x in faults[i]), use_dtz)
             for i in range(recorded)]
    return {"layer": spec.layer, "chunk": chunk, "positions": hi - lo,
            "counts": {"win": int(wins), "draw": int(draws), "loss": int(losses)},
            "value_faults": int(value_faults), "dtz_faults": int(dtz_faults), "max_dtz": int(max_dtz),
            "faults": found, "seconds": time.perf_counter() - start, "load_seconds": loaded - start,
            "cpu_seconds": time.thread_time() - cpu}


def position_fault(variant: Variant, spec: LayerSpec, rank: int, value: int, want: int, dtz: int,
                   want_dtz: int, use_dtz: bool) -> dict:
    stored = {"value": VALUE_NAMES[value]}
    expected = {"value": VALUE_NAMES[want]}
    if use_dtz:
        stored["dtz"], expected["dtz"] = dtz, want_dtz
    kind = "value" if value != want else "dtz"
    board = position_of(variant, spec, rank)
    message = (f"layer {spec.name} rank {rank} position {show_board(board, variant.pits)}: "
               f"stored {_show(stored)}, expected {_show(expected)}.")
    return fault(spec.layer, kind, message, rank=rank, position=board, stored=stored, expected=expected)


def show_board(board: list, pits: int) -> str:
    return "[" + " ".join(map(str, board[:pits])) + " | " + " ".join(map(str, board[pits:])) + "]"


def _show(value: dict) -> str:
    return value["value"].upper() + (f" dtz {value['dtz']}" if "dtz" in value else "")


# -- sampled positions: only the blocks they need ----------------------------------------
def _check_headers(job: VerifyJob, spec: LayerSpec):
    """--sample's file checks: each header (against its checksums) and size."""
    start = time.perf_counter()
    faults = []
    usable = True
    reader = _reader(job)
    for kind in _kinds(spec):
        name = layer_file(spec.k1, spec.k2, kind)
        try:
            size = reader.store.size(name)      # the file's own size, not the one recorded
            reader.header(spec.k1, spec.k2, kind, _bits(spec, kind))
        except (StoreError, FormatError) as exc:
            faults.append(fault(spec.layer, "file" if isinstance(exc, StoreError) else "format", str(exc),
                                file=name))
            usable = False
            continue
        _check_entry_file(spec, kind, name, size, None, faults)
    return faults, usable, time.perf_counter() - start


def _stored(job: VerifyJob, spec: LayerSpec, rank: int, with_dtz: bool):
    """(code, distance) of one position read from its blocks; _Both if both bits."""
    reader = _reader(job)
    win = reader.bit(spec.k1, spec.k2, "win", spec.positions, rank)
    draw = reader.bit(spec.k1, spec.k2, "draw", spec.positions, rank)
    if win and draw:
        raise _Both(spec, rank)
    code = kernels.WIN if win else (0 if draw else kernels.LOSS)
    dtz = reader.distance(spec.k1, spec.k2, spec.dtz_width, spec.positions, rank) if with_dtz else 0
    return code, dtz


class _Both(Exception):
    def __init__(self, spec, rank):
        self.spec, self.rank = spec, rank


def verify_sample_task(job: VerifyJob, spec: LayerSpec, partner: LayerSpec, deps: tuple, chunk: int,
                       ranks: np.ndarray) -> dict:
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
    found, value_faults, dtz_faults, max_dtz = [], 0, 0, 0
    for x in (int(r) for r in ranks):
        try:
            unrank(x, stones, v.binom, board)
            count = list_moves(board, v.pits, v.win_kazan, spec.k1, v.binom, captured, child)
            for i in range(count):
                c = int(captured[i])
                if c == WINS_AT_ONCE:
                    child_value[i], child_dtz[i] = kernels.LOSS, 0
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
                found.append(fault(both.spec.layer, "both", f"layer {both.spec.name} rank {both.rank} is marked "
                                   "both win and draw.", rank=both.rank,
                                   position=position_of(v, both.spec, both.rank)))
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
    return {"layer": spec.layer, "chunk": chunk, "positions": int(len(ranks)), "counts": counts,
            "value_faults": value_faults, "dtz_faults": dtz_faults, "max_dtz": max_dtz, "faults": found,
            "seconds": time.perf_counter() - start, "load_seconds": 0.0, "cpu_seconds": time.thread_time() - cpu}


# -- the driver ---------------------------------------------------------------------------
@dataclass
class LayerResult:
    spec: LayerSpec
    faults: list = field(default_factory=list)
    fault_count: int = 0
    checked: int = 0
    counts: dict = field(default_factory=lambda: {"win": 0, "draw": 0, "loss": 0})
    max_dtz: int = 0
    seconds: float = 0.0
    chunks_left: int = 0
    positions_checked: bool = False   # its position check ran (all chunks)
    note: str = ""

    def add_fault(self, item: dict) -> None:
        self.faults.append(item)
        self.fault_count += 1

    @property
    def passed(self) -> bool:
        return self.fault_count == 0 and self.positions_checked

    def as_dict(self) -> dict:
        return {"layer": self.spec.name, "k1": self.spec.k1, "k2": self.spec.k2,
                "positions": self.spec.positions, "checked": self.checked, "passed": self.passed,
                "counts": self.counts, "max_dtz": self.max_dtz if self.spec.dtz_width else None,
                "distances": self.spec.dtz_width is not None, "cpu_seconds": round(self.seconds, 3),
                "fault_count": self.fault_count, "faults": self.faults}

    def line(self) -> str:
        s = self.spec
        status = "OK  " if self.passed else "FAIL"
        c = self.counts
        text = (f"layer {s.name:<6} {status} {self.checked:,} of {s.positions:,} positions: win {c['win']:,} "
                f"draw {c['draw']:,} loss {c['loss']:,}")
        if s.dtz_width:
            text += f", dtz max {self.max_dtz}"
        text += f", {self.seconds:.2f}s CPU"
        if self.fault_count:
            text += f", {self.fault_count:,} failure{'s' if self.fault_count != 1 else ''}"
        if self.note:
            text += f" ({self.note})"
        return text


@dataclass
class Discovered:
    store: Store
    variant: Variant
    manifest: dict | None
    present: dict                # layer -> manifest entry (None without one)
    faults: list                 # [(layer or None, fault)] about names and entries


def discover_tablebase(url: str, storage_options: dict | None = None,
                       variant_args: tuple = (None, None)) -> Discovered:
    """The layers at `url` (manifest entries and layer files) and the variant: the
    manifest's, or (stones, pits) from variant_args for a folder without one."""
    store = Store(url, storage_options)
    manifest = find_tablebase(store)
    stones, pits = variant_args
    if manifest is not None:
        recorded = manifest.get("variant") or {}
        try:
            variant = Variant(int(recorded.get("stones")), int(recorded.get("pits")))
        except (TypeError, ValueError, UsageError):
            raise StoreError(f"{store.shown}/manifest.json names no valid variant.") from None
        for flag, given, have in (("--stones", stones, variant.stones), ("--pits", pits, variant.pits)):
            if given is not None and given != have:
                raise UsageError(f"{store.shown} holds a tablebase of {variant.describe()}; {flag} {given} "
                                 "does not match it.")
    else:
        variant = Variant(50 if stones is None else stones, 5 if pits is None else pits)
    on_disk = {parsed[:2] for parsed in map(parse_layer_file, store.list_names("layer_*.bin")) if parsed}
    faults = []
    entries = {}
    if manifest is not None:
        for key, entry in manifest["layers"].items():
            layer = parse_layer_name(key)
            if layer is None:
                faults.append((None, {"layer": None, "kind": "manifest",
                                      "message": f"the manifest has an entry {key!r}, which names no layer."}))
                continue
            entries[layer] = entry if isinstance(entry, dict) else {}
    layers = {}
    for layer in sorted(set(entries) | on_disk):
        if layer[0] not in variant.kazans or layer[1] not in variant.kazans:
            faults.append((None, fault(layer, "file", f"layer {layer_name(*layer)} is not a layer of the "
                                       f"{variant.describe()} game.")))
            continue
        layers[layer] = entries.get(layer)
        if manifest is not None and layer not in entries:
            faults.append((layer, fault(layer, "manifest", f"layer {layer_name(*layer)} has files but no "
                                        "manifest entry, so their sizes and sha256 cannot be checked.")))
    if not layers:
        raise no_tablebase(store)
    return Discovered(store, variant, manifest, layers, faults)


def check_options(variant: Variant, min_captured: int, sample: int | None, chunk_size: int) -> None:
    if chunk_size < 1:
        raise UsageError("--chunk-size must be at least 1 position.")
    if sample is not None and sample < 1:
        raise UsageError("--sample must be at least 1 position per layer.")
    top = 2 * (variant.win_kazan - 2)
    if not 0 <= min_captured <= top:
        raise UsageError(f"--min-captured must be from 0 to {top} for the {variant.stones}-stone game, "
                         f"not {min_captured}.")


def verify(client, url: str, storage_options: dict | None = None, *, min_captured: int = 0,
           sample: int | None = None, seed: int | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE,
           wdl_only: bool = False, variant_args: tuple = (None, None), discovered: Discovered | None = None,
           log=lambda line: None) -> dict:
    """Check the tablebase at `url`; `log` gets a line per layer as it finishes.
    Returns the report (report["passed"] says whether everything passed)."""
    started = time.perf_counter()
    found = discovered or discover_tablebase(url, storage_options, variant_args)
    store, variant, manifest, present, early = (found.store, found.variant, found.manifest, found.present,
                                                found.faults)
    check_options(variant, min_captured, sample, chunk_size)
    if sample is not None and seed is None:
        seed = new_seed()
    use_dtz = (not wdl_only and manifest is not None
               and any(isinstance(e, dict) and e.get("dtz") for e in present.values()))
    job = VerifyJob(url, variant, dict(storage_options or {}), uuid.uuid4().hex)
    # Task keys end with the run: a verify right after another on the same cluster
    # must not be answered with (or cancelled by the end of) the one before.
    tag = job.run[:8]
    specs = {}
    results = {}
    for layer, entry in present.items():
        width = None
        if use_dtz:
            width = ((entry or {}).get("dtz") or {}).get("bytes_per_position")
            if width not in (1, 2):
                width = None
        specs[layer] = LayerSpec(*layer, variant.layer_size(*layer), entry, width)
    checked = [layer for layer in present if sum(layer) >= min_captured]
    if not checked:
        raise BestemsheError(f"{store.shown} holds no layer with k1 + k2 >= {min_captured}.")
    for layer in checked:
        results[layer] = LayerResult(specs[layer])
    other_faults = []
    for layer, item in early:
        if layer in results:
            results[layer].add_fault(item)
        elif layer is None:
            other_faults.append(item)
    for layer in checked:
        spec = specs[layer]
        entry = spec.entry
        if use_dtz and spec.dtz_width is None:
            results[layer].add_fault(fault(layer, "file", f"layer {spec.name} has no distance table "
                                           "(the other layers have one), so its distances are not checked."))
        if entry is not None and entry.get("positions") not in (None, spec.positions):
            results[layer].add_fault(fault(layer, "manifest", f"layer {spec.name} has {spec.positions:,} positions "
                                           f"but the manifest says {entry.get('positions')}."))

    deps_of = {layer: (layer[::-1], capture_targets(variant, *layer)) for layer in checked}
    missing = {}
    for layer in checked:
        partner, targets = deps_of[layer]
        gone = [d for d in [partner, *targets] if d not in present]
        for d in gone:
            results[layer].add_fault(fault(layer, "dependency", f"layer {layer_name(*layer)} needs layer "
                                           f"{layer_name(*d)}, which is missing (no files, no manifest entry)."))
        if gone:
            missing[layer] = gone
            results[layer].note = "positions not checked: a layer it needs is missing"

    compile_times = client.run(warm_up, variant.pits)
    # Captures only reach larger k1 + k2, so every layer a checked layer needs is checked too.
    needed = sorted(checked, key=lambda l: (-sum(l), l))
    lines: list = []
    futures = []
    cpu_seconds = 0.0
    try:
        file_futures = {layer: client.submit(verify_files_task, job, specs[layer], sample is not None,
                                             key=verify_files_key(*layer, tag), pure=False)
                        for layer in needed}
        futures += list(file_futures.values())
        files = dict(zip(file_futures, client.gather(list(file_futures.values()))))
        for layer, report in files.items():
            if layer in results:
                r = results[layer]
                for item in report["faults"]:
                    r.add_fault(item)
                r.fault_count += report["fault_count"] - len(report["faults"])
                r.seconds += report["cpu_seconds"]
                cpu_seconds += report["cpu_seconds"]
        for layer in checked:
            if layer in missing:
                continue
            partner, targets = deps_of[layer]
            others = [d for d in dict.fromkeys([partner, *targets]) if d != layer and not files[d]["usable"]]
            if others:  # (its own unreadable files are failures of their own already)
                names = ", ".join(f"layer {layer_name(*d)}" for d in others)
                results[layer].add_fault(fault(layer, "dependency", f"positions of layer {layer_name(*layer)} "
                                               f"not checked: {names} cannot be read."))
            if others or not files[layer]["usable"]:
                missing[layer] = others or [layer]
                results[layer].note = "positions not checked"

        from distributed import as_completed

        chunk_futures = []
        for layer in sorted(checked, key=lambda l: (-sum(l), l)):
            if layer in missing:
                continue
            spec = specs[layer]
            partner, targets = deps_of[layer]
            deps = tuple(specs[t] for t in targets)
            if sample is None:
                pieces = [(lo, min(lo + chunk_size, spec.positions)) for lo in range(0, spec.positions, chunk_size)]
                submitted = [client.submit(verify_chunk_task, job, spec, specs[partner], deps, c, lo, hi,
                                           key=verify_key(*layer, c, tag), pure=False)
                             for c, (lo, hi) in enumerate(pieces)]
            else:
                rng = np.random.default_rng([seed, *layer])
                count = min(sample, spec.positions)
                ranks = np.sort(rng.choice(spec.positions, size=count, replace=False)) \
                    if count < spec.positions else np.arange(spec.positions, dtype=np.int64)
                submitted = [client.submit(verify_sample_task, job, spec, specs[partner], deps, c,
                                           ranks[lo:lo + SAMPLE_CHUNK],
                                           key=verify_key(*layer, c, tag), pure=False)
                             for c, lo in enumerate(range(0, count, SAMPLE_CHUNK))]
            results[layer].chunks_left = len(submitted)
            chunk_futures += submitted
        futures += chunk_futures
        for layer in checked:
            if results[layer].chunks_left == 0:
                lines.append(results[layer].line())
                log(lines[-1])
        for future in as_completed(chunk_futures):
            part = future.result()
            r = results[tuple(part["layer"])]
            r.checked += part["positions"]
            for k, n in part["counts"].items():
                r.counts[k] += n
            r.max_dtz = max(r.max_dtz, part["max_dtz"])
            r.seconds += part["cpu_seconds"]
            cpu_seconds += part["cpu_seconds"]
            for item in part["faults"]:
                r.faults.append(item)
            r.fault_count += part["value_faults"] + part["dtz_faults"]
            r.chunks_left -= 1
            if r.chunks_left == 0:
                r.positions_checked = True
                lines.append(r.line())
                log(lines[-1])
    except KilledWorker as exc:
        key = getattr(exc, "task", None) or str(exc).split()[0]
        raise BestemsheError(f"the workers running {key} died (out of memory?); give them more memory "
                             "or use fewer threads per worker.") from None
    finally:
        client.cancel(futures)
        try:
            client.run(forget_run, job.run)
        except Exception:  # a lost worker has nothing left to forget
            pass
    seconds = time.perf_counter() - started
    threads = sum(client.nthreads().values()) or 1
    layers = [results[layer] for layer in sorted(checked, key=lambda l: (-sum(l), l))]
    positions = sum(r.checked for r in layers)
    failures = sum(r.fault_count for r in layers) + len(other_faults)
    passed = failures == 0 and all(r.passed for r in layers)
    proof = passed and use_dtz and sample is None
    report = {
        "url": store.shown, "variant": variant.as_dict(), "mode": "sample" if sample else "full",
        "sample": sample, "seed": seed if sample else None, "min_captured": min_captured,
        "manifest": manifest is not None, "distances": use_dtz, "passed": passed, "proof": proof,
        "layers_checked": len(layers), "positions_checked": positions, "failures": failures,
        "seconds": round(seconds, 3), "compile_seconds": round(max(compile_times.values(), default=0.0), 3),
        "cpu_seconds": round(cpu_seconds, 3), "threads": threads,
        "positions_per_second": round(positions / seconds) if seconds else 0,
        "positions_per_core_second": round(positions / cpu_seconds) if cpu_seconds else 0,
        "other_faults": other_faults, "layers": [r.as_dict() for r in layers], "lines": lines,
    }
    report["summary"] = summary_line(report)
    return report


def summary_line(report: dict) -> str:
    failed = [l for l in report["layers"] if not l["passed"]]
    head = (f"verified {report['layers_checked']} layers, {report['positions_checked']:,} positions in "
            f"{report['seconds']:.1f}s on {report['threads']} thread{'s' if report['threads'] != 1 else ''} "
            f"({report['positions_per_core_second']:,} "
            f"positions per core-second: {report['cpu_seconds']:.1f} CPU seconds in the verify tasks): ")
    if not report["passed"]:
        return head + (f"FAILED, {report['failures']:,} failure{'s' if report['failures'] != 1 else ''} in "
                       f"{len(failed)} layer{'s' if len(failed) != 1 else ''}.")
    if report["mode"] == "sample":
        return head + (f"PASSED on {report['sample']:,} random positions per layer (seed {report['seed']}): "
                       "a sample, not a proof; headers and sizes checked, not sha256.")
    if report["proof"]:
        return head + ("PASSED with distance tables: every value is proved from the rules "
                       "(each WIN and LOSS by a strictly shorter line, each DRAW by its moves).")
    why = "no manifest, so file sizes and sha256 were not checked; " if not report["manifest"] else ""
    return head + (f"PASSED, win/draw/loss only: {why}a pass shows the values are consistent, not that "
                   "they are right (a tablebase solved with --dtz can be proved).")


def failure_lines(report: dict, per_layer: int = MAX_FAULTS) -> list:
    """The failures, each naming its layer (and rank, position, stored and expected
    values where it is a position), at most per_layer of each layer."""
    out = [f"  {item['message']}" for item in report["other_faults"]]
    for layer in report["layers"]:
        shown = layer["faults"][:per_layer]
        out += [f"  {item['message']}" for item in shown]
        if layer["fault_count"] > len(shown):
            out.append(f"  layer {layer['layer']}: {layer['fault_count'] - len(shown):,} more failures.")
    return out


def new_seed() -> int:
    return secrets.randbits(32)
