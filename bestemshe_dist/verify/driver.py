"""`bestemshe-dist verify`'s driver: find the layers, check their files, then
their positions on the workers (tasks.py), and report.

Faults found before any task (discovery, the manifest, missing layers) and the
workers' go into one LayerResult per checked layer; the report says whether
everything passed and whether the pass is a proof (distance tables, every
position).
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from distributed import Client, Future
from distributed.scheduler import KilledWorker

from ..data.store import Store, find_tablebase, no_tablebase
from ..errors import BestemsheError, StoreError, UsageError
from ..game.dag import check_min_captured
from ..game.geometry import capture_targets
from ..game.variant import Variant
from ..naming import (
    VERIFY_REPORT,
    counted,
    layer_name,
    parse_layer_file,
    parse_layer_name,
    verify_distances_key,
    verify_files_key,
    verify_key,
)
from .records import binding, read_record, write_record
from .tasks import (
    BOTH,
    CACHE_SHARE,
    DEFAULT_CHUNK_SIZE,
    DISTANCES,
    MAX_FAULTS,
    SAMPLE_CHUNK,
    VALUES,
    LayerSpec,
    VerifyJob,
    check_bytes,
    fault,
    forget_run,
    gate_task,
    verify_chunk_task,
    verify_distances_task,
    verify_files_task,
    verify_sample_task,
    warm_up,
)


@dataclass
class LayerResult:
    spec: LayerSpec
    faults: list[dict[str, Any]] = field(default_factory=list)
    fault_count: int = 0
    checked: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {"win": 0, "draw": 0, "loss": 0})
    max_dtz: int = 0
    seconds: float = 0.0
    chunks_left: int = 0
    positions_checked: bool = False  # its position check ran (all chunks)
    note: str = ""

    def add_fault(self, item: dict[str, Any]) -> None:
        self.faults.append(item)
        self.fault_count += 1

    @property
    def passed(self) -> bool:
        return self.fault_count == 0 and self.positions_checked

    def as_dict(self) -> dict[str, Any]:
        return {
            "layer": self.spec.name,
            "k1": self.spec.k1,
            "k2": self.spec.k2,
            "positions": self.spec.positions,
            "checked": self.checked,
            "passed": self.passed,
            "counts": self.counts,
            "max_dtz": self.max_dtz if self.spec.dtz_width else None,
            "distances": self.spec.dtz_width is not None,
            "cpu_seconds": round(self.seconds, 3),
            "fault_count": self.fault_count,
            "faults": self.faults,
            "note": self.note,
        }

    def line(self) -> str:
        s = self.spec
        status = "OK  " if self.passed else "FAIL"
        c = self.counts
        text = (
            f"layer {s.name:<6} {status} {self.checked:,} of {s.positions:,} positions: win {c['win']:,} "
            f"draw {c['draw']:,} loss {c['loss']:,}"
        )
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
    manifest: dict[str, Any] | None
    present: dict[tuple[int, int], dict[str, Any] | None]  # layer -> manifest entry (None without one)
    faults: list[
        tuple[tuple[int, int] | None, dict[str, Any]]
    ]  # [(layer or None, fault)] about names and entries


def discover_tablebase(
    url: str,
    storage_options: dict[str, Any] | None = None,
    variant_args: tuple[int | None, int | None] = (None, None),
) -> Discovered:
    """The layers at `url` (manifest entries and layer files) and the variant: the
    manifest's, or (stones, pits) from variant_args for a folder without one."""
    store = Store(url, storage_options)
    manifest = find_tablebase(store)
    stones, pits = variant_args
    if manifest is not None:
        # Any: whatever the manifest holds; a missing number is int(None), a TypeError
        recorded: Any = manifest.get("variant") or {}
        try:
            variant = Variant(int(recorded.get("stones")), int(recorded.get("pits")))
        except (TypeError, ValueError, UsageError):
            raise StoreError(f"{store.shown}/manifest.json names no valid variant.") from None
        for flag, given, have in (("--stones", stones, variant.stones), ("--pits", pits, variant.pits)):
            if given is not None and given != have:
                raise UsageError(
                    f"{store.shown} holds a tablebase of {variant.describe()}; {flag} {given} "
                    "does not match it."
                )
    else:
        variant = Variant(50 if stones is None else stones, 5 if pits is None else pits)
    on_disk = {parsed[:2] for parsed in map(parse_layer_file, store.list_names("layer_*.bin")) if parsed}
    faults: list[tuple[tuple[int, int] | None, dict[str, Any]]] = []
    entries: dict[tuple[int, int], dict[str, Any]] = {}
    if manifest is not None:
        for key, entry in manifest["layers"].items():
            layer = parse_layer_name(key)
            if layer is None:
                faults.append(
                    (
                        None,
                        {
                            "layer": None,
                            "kind": "manifest",
                            "message": f"the manifest has an entry {key!r}, which names no layer.",
                        },
                    )
                )
                continue
            entries[layer] = entry if isinstance(entry, dict) else {}
    layers: dict[tuple[int, int], dict[str, Any] | None] = {}
    for layer in sorted(set(entries) | on_disk):
        if layer[0] not in variant.kazans or layer[1] not in variant.kazans:
            faults.append(
                (
                    None,
                    fault(
                        layer,
                        "file",
                        f"layer {layer_name(*layer)} is not a layer of the {variant.describe()} game.",
                    ),
                )
            )
            continue
        layers[layer] = entries.get(layer)
        if manifest is not None and layer not in entries:
            faults.append(
                (
                    layer,
                    fault(
                        layer,
                        "manifest",
                        f"layer {layer_name(*layer)} has files but no "
                        "manifest entry, so their sizes and sha256 cannot be checked.",
                    ),
                )
            )
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
        raise UsageError(
            f"--min-captured must be from 0 to {top} for the {variant.stones}-stone game, not {min_captured}."
        )
    check_min_captured(min_captured)


@dataclass
class _Run:
    """One verification: what it checks and what it has found so far."""

    job: VerifyJob
    store: Store
    manifest: dict[str, Any] | None
    use_dtz: bool
    specs: dict[tuple[int, int], LayerSpec]  # every layer present
    checked: list[tuple[int, int]]  # the layers whose positions are checked (k1 + k2 >= min_captured)
    results: dict[tuple[int, int], LayerResult]  # for the checked ones
    deps_of: dict[
        tuple[int, int], tuple[tuple[int, int], list[tuple[int, int]]]
    ]  # layer -> (partner, capture targets)
    other_faults: list[dict[str, Any]] = field(default_factory=list)
    # layer -> what keeps its positions from being checked
    missing: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    cpu_seconds: float = 0.0
    # layer -> what its record binds (records.py); only where records can be kept
    bindings: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    skipped: set[tuple[int, int]] = field(default_factory=set)  # passed in an earlier run, same files
    gates: list[Future[Any]] = field(default_factory=list)  # tasks that order large layers
    records_problem: str | None = None  # why no record could be written (said once)

    @property
    def tag(self) -> str:
        # Task keys end with the run: a verify right after another on the same cluster
        # must not be answered with (or cancelled by the end of) the one before.
        return self.job.run[:8]


def _prepare(
    found: Discovered, url: str, storage_options: dict[str, Any] | None, min_captured: int, wdl_only: bool
) -> _Run:
    """The run's layers, specs and results, with the faults found before any task:
    discovery's, manifest counts, missing distance tables and missing dependencies."""
    variant, manifest, present = found.variant, found.manifest, found.present
    use_dtz = (
        not wdl_only
        and manifest is not None
        and any(isinstance(e, dict) and e.get("dtz") for e in present.values())
    )
    specs: dict[tuple[int, int], LayerSpec] = {}
    for layer, entry in present.items():
        width = ((entry or {}).get("dtz") or {}).get("bytes_per_position") if use_dtz else None
        specs[layer] = LayerSpec(
            *layer, variant.layer_size(*layer), entry, width if width in (1, 2) else None
        )
    checked = [layer for layer in present if sum(layer) >= min_captured]
    if not checked:
        raise BestemsheError(f"{found.store.shown} holds no layer with k1 + k2 >= {min_captured}.")
    run = _Run(
        VerifyJob(url, variant, dict(storage_options or {}), uuid.uuid4().hex),
        found.store,
        manifest,
        use_dtz,
        specs,
        checked,
        {layer: LayerResult(specs[layer]) for layer in checked},
        {layer: (layer[::-1], capture_targets(variant, *layer)) for layer in checked},
    )
    for where, item in found.faults:
        if where is not None and where in run.results:
            run.results[where].add_fault(item)
        elif where is None:
            run.other_faults.append(item)
    for layer in checked:
        spec, entry, result = specs[layer], specs[layer].entry, run.results[layer]
        if use_dtz and spec.dtz_width is None:
            result.add_fault(
                fault(
                    layer,
                    "file",
                    f"layer {spec.name} has no distance table "
                    "(the other layers have one), so its distances are not checked.",
                )
            )
        if entry is not None and entry.get("positions") not in (None, spec.positions):
            result.add_fault(
                fault(
                    layer,
                    "manifest",
                    f"layer {spec.name} has {spec.positions:,} positions "
                    f"but the manifest says {entry.get('positions')}.",
                )
            )
        partner, targets = run.deps_of[layer]
        gone = [d for d in [partner, *targets] if d not in present]
        for d in gone:
            result.add_fault(
                fault(
                    layer,
                    "dependency",
                    f"layer {layer_name(*layer)} needs layer "
                    f"{layer_name(*d)}, which is missing (no files, no manifest entry).",
                )
            )
        if gone:
            run.missing[layer] = gone
            result.note = "positions not checked: a layer it needs is missing"
    return run


def _check_files(client: Client, run: _Run, sample: bool, futures: list[Future[Any]]) -> None:
    """Every checked layer's files (captures only reach larger k1 + k2, so every
    layer a checked one needs is checked too); a layer whose own or needed files
    cannot be read gets no position check."""
    needed = sorted(run.checked, key=lambda l: (-sum(l), l))
    file_futures = {
        layer: client.submit(
            verify_files_task,
            run.job,
            run.specs[layer],
            sample,
            key=verify_files_key(*layer, run.tag),
            pure=False,
        )
        for layer in needed
    }
    futures += list(file_futures.values())
    files = dict(zip(file_futures, client.gather(list(file_futures.values()))))
    for layer, report in files.items():
        if layer in run.results:
            r = run.results[layer]
            for item in report["faults"]:
                r.add_fault(item)
            r.fault_count += report["fault_count"] - len(report["faults"])
            r.seconds += report["cpu_seconds"]
            run.cpu_seconds += report["cpu_seconds"]
    for layer in run.checked:
        if layer in run.missing:
            continue
        partner, targets = run.deps_of[layer]
        others = [d for d in dict.fromkeys([partner, *targets]) if d != layer and not files[d]["usable"]]
        if others:  # (its own unreadable files are failures of their own already)
            names = ", ".join(f"layer {layer_name(*d)}" for d in others)
            run.results[layer].add_fault(
                fault(
                    layer,
                    "dependency",
                    f"positions of layer {layer_name(*layer)} not checked: {names} cannot be read.",
                )
            )
        if others or not files[layer]["usable"]:
            run.missing[layer] = others or [layer]
            run.results[layer].note = "positions not checked"


def _resume(run: _Run, log: Callable[[str], object], fresh: bool) -> None:
    """Bind each layer about to be checked to the files its check reads, and take
    the result of an earlier run with the same binding in place of checking it
    again (unless `fresh`)."""
    for layer in run.checked:
        result = run.results[layer]
        if layer in run.missing or result.fault_count:
            continue  # not checked, or already failing: never recorded as passed
        partner, targets = run.deps_of[layer]
        bound = binding(run.job.variant, run.use_dtz, run.specs, [layer, partner, *targets])
        if bound is None:
            continue
        run.bindings[layer] = bound
        record = None if fresh else read_record(run.store, layer, bound)
        if record is None:
            continue
        result.checked = int(record["checked"])
        result.counts = {k: int(record["counts"][k]) for k in ("win", "draw", "loss")}
        result.max_dtz = int(record.get("max_dtz") or 0)
        result.seconds += float(record.get("cpu_seconds") or 0.0)
        run.cpu_seconds += float(record.get("cpu_seconds") or 0.0)
        result.positions_checked = True
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(record.get("verified_at", 0))))
        result.note = f"verified by an earlier run on the same files, {when}"
        run.skipped.add(layer)
    if run.skipped:
        log(
            f"{counted(len(run.skipped), 'layer')} verified by earlier runs on the same files: "
            "their positions are not checked again (--fresh checks them)"
        )


def _keep_record(run: _Run, result: LayerResult, log: Callable[[str], object]) -> None:
    """A layer that passed in this run: its record, so that a rerun skips it."""
    bound = run.bindings.get(result.spec.layer)
    if bound is None or not result.passed or run.records_problem is not None:
        return
    try:
        write_record(run.store, result.as_dict(), bound)
    except StoreError as exc:
        run.records_problem = str(exc)
        log(f"cannot keep verify's records in {run.store.shown} ({exc}): a rerun checks every layer again")


def worker_bytes(client: Client) -> int | None:
    """What the verifier's cache may hold on the smallest worker (None: no limit)."""
    limits = [w.get("memory_limit") or 0 for w in client.scheduler_info()["workers"].values()]
    if not limits or not all(limits):
        return None
    return int(min(limits) * CACHE_SHARE)


def plan_passes(run: _Run, budget: int | None) -> dict[tuple[int, int], str]:
    """How each layer's positions are checked (tasks.BOTH or VALUES, then
    DISTANCES) on workers whose caches hold `budget` bytes; a layer that cannot
    be checked there is refused here, before any task, in one sentence."""
    chosen: dict[tuple[int, int], str] = {}
    for layer in run.checked:
        chosen[layer] = BOTH
        if layer in run.missing or layer in run.skipped:
            continue
        spec = run.specs[layer]
        partner, targets = run.deps_of[layer]
        deps = tuple(run.specs[t] for t in targets)
        args = (spec, run.specs[partner], deps, run.use_dtz)
        if budget is None or check_bytes(*args) <= budget:
            continue
        need = (
            max(check_bytes(*args, VALUES), check_bytes(*args, DISTANCES))
            if run.use_dtz
            else check_bytes(*args)
        )
        if need > budget:
            raise BestemsheError(
                f"layer {spec.name} needs {need / 2**30:.1f} GiB in one worker to be checked, "
                f"but a worker's verify cache holds {budget / 2**30:.1f} GiB "
                f"({CACHE_SHARE:.0%} of its memory limit): give each worker at least "
                f"{need / CACHE_SHARE / 2**30:.1f} GiB."
            )
        chosen[layer] = VALUES
    return chosen


def _submit_positions(
    client: Client, run: _Run, sample: int | None, seed: int | None, chunk_size: int
) -> list[Future[dict[str, Any]]]:
    """The position checks: every rank in chunks, or `sample` random ranks a layer.
    A layer that holds more than half of a worker's cache runs alone (its tasks
    wait for those before it, and those after it for its own), and one whose
    capture targets and partner's distances do not fit together is checked in
    two passes (values, then distances), the second after the first."""
    submitted_all: list[Future[dict[str, Any]]] = []
    budget = worker_bytes(client) if sample is None else None
    passes = plan_passes(run, budget) if sample is None else {}
    gate: Future[Any] | None = None
    # a layer that ran alone, and its tasks: the next layer's wait for them
    after: tuple[tuple[int, int], list[Future[dict[str, Any]]]] | None = None
    for layer in sorted(run.checked, key=lambda l: (-sum(l), l)):
        if layer in run.missing or layer in run.skipped:
            continue
        spec = run.specs[layer]
        partner, targets = run.deps_of[layer]
        deps = tuple(run.specs[t] for t in targets)
        if sample is None:
            pieces = [
                (lo, min(lo + chunk_size, spec.positions)) for lo in range(0, spec.positions, chunk_size)
            ]
            mode = passes[layer]
            alone = budget is not None and (
                mode != BOTH or check_bytes(spec, run.specs[partner], deps, run.use_dtz) > budget // 2
            )
            if after is not None:  # the layer before ran alone: this one waits for it
                gate = _gate(client, run, f"after-{layer_name(*after[0])}", after[1])
                after = None
            if alone and submitted_all:
                gate = _gate(client, run, f"before-{layer_name(*layer)}", submitted_all + [gate])
            submitted = [
                client.submit(
                    verify_chunk_task,
                    run.job,
                    spec,
                    run.specs[partner],
                    deps,
                    c,
                    lo,
                    hi,
                    mode,
                    gate,
                    key=verify_key(*layer, c, run.tag),
                    pure=False,
                )
                for c, (lo, hi) in enumerate(pieces)
            ]
            if mode == VALUES:
                middle = _gate(client, run, f"values-{layer_name(*layer)}", submitted)
                submitted = [
                    client.submit(
                        verify_distances_task,
                        run.job,
                        spec,
                        run.specs[partner],
                        first,
                        middle,
                        key=verify_distances_key(*layer, c, run.tag),
                        pure=False,
                    )
                    for c, first in enumerate(submitted)
                ]
            if alone:
                after = (layer, submitted)
        else:
            assert seed is not None  # verify() draws one for a sample
            rng = np.random.default_rng([seed, *layer])
            count = min(sample, spec.positions)
            ranks = (
                np.sort(rng.choice(spec.positions, size=count, replace=False))
                if count < spec.positions
                else np.arange(spec.positions, dtype=np.int64)
            )
            submitted = [
                client.submit(
                    verify_sample_task,
                    run.job,
                    spec,
                    run.specs[partner],
                    deps,
                    c,
                    ranks[lo : lo + SAMPLE_CHUNK],
                    key=verify_key(*layer, c, run.tag),
                    pure=False,
                )
                for c, lo in enumerate(range(0, count, SAMPLE_CHUNK))
            ]
        run.results[layer].chunks_left = len(submitted)
        submitted_all += submitted
    return submitted_all


def _gate(client: Client, run: _Run, name: str, after: list[Any]) -> Future[Any]:
    """A task that ends when every task of `after` has (None entries left out)."""
    gate = client.submit(
        gate_task, *[f for f in after if f is not None], key=f"verify-gate-{name}-{run.tag}", pure=False
    )
    run.gates.append(gate)
    return gate


def _gather_positions(
    run: _Run, chunk_futures: list[Future[dict[str, Any]]], log: Callable[[str], object]
) -> None:
    """Each chunk's counts and faults into its layer's result, a line per layer as it ends."""
    from distributed import as_completed

    for layer in run.checked:
        if run.results[layer].chunks_left == 0:
            run.lines.append(run.results[layer].line())
            log(run.lines[-1])
    for future in as_completed(chunk_futures):
        part = future.result()
        r = run.results[tuple(part["layer"])]
        r.checked += part["positions"]
        for k, n in part["counts"].items():
            r.counts[k] += n
        r.max_dtz = max(r.max_dtz, part["max_dtz"])
        r.seconds += part["cpu_seconds"]
        run.cpu_seconds += part["cpu_seconds"]
        r.faults.extend(part["faults"])
        r.fault_count += part["value_faults"] + part["dtz_faults"]
        r.chunks_left -= 1
        if r.chunks_left == 0:
            r.positions_checked = True
            _keep_record(run, r, log)
            run.lines.append(r.line())
            log(run.lines[-1])


def verify(
    client: Client,
    url: str,
    storage_options: dict[str, Any] | None = None,
    *,
    min_captured: int = 0,
    sample: int | None = None,
    seed: int | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    wdl_only: bool = False,
    variant_args: tuple[int | None, int | None] = (None, None),
    discovered: Discovered | None = None,
    log: Callable[[str], object] = lambda line: None,
    fresh: bool = False,
) -> dict[str, Any]:
    """Check the tablebase at `url`; `log` gets a line per layer as it finishes.
    A full check keeps a record of each layer that passed (records.py), and a
    rerun over the same files skips those layers' positions unless `fresh`.
    Returns the report (report["passed"] says whether everything passed)."""
    started = time.perf_counter()
    found = discovered or discover_tablebase(url, storage_options, variant_args)
    check_options(found.variant, min_captured, sample, chunk_size)
    if sample is not None and seed is None:
        seed = new_seed()
    run = _prepare(found, url, storage_options, min_captured, wdl_only)
    compile_times = client.run(warm_up, found.variant.pits)
    futures: list[Future[Any]] = []
    try:
        _check_files(client, run, sample is not None, futures)
        if sample is None and run.manifest is not None:
            _resume(run, log, fresh)
        chunk_futures = _submit_positions(client, run, sample, seed, chunk_size)
        futures += chunk_futures + run.gates
        _gather_positions(run, chunk_futures, log)
    except KilledWorker as exc:
        key = getattr(exc, "task", None) or str(exc).split()[0]
        raise BestemsheError(
            f"the workers running {key} died (out of memory?); give them more memory "
            "or use fewer threads per worker."
        ) from None
    finally:
        client.cancel(futures)
        try:
            client.run(forget_run, run.job.run)
        except Exception:  # a lost worker has nothing left to forget
            pass
    report = _report(
        client, run, found, time.perf_counter() - started, compile_times, sample, seed, min_captured
    )
    if sample is None and run.manifest is not None and run.records_problem is None:
        try:  # the last full report, for `results`; the layers' records already hold what resumes
            run.store.write_bytes(VERIFY_REPORT, json.dumps(report, sort_keys=True).encode())
        except StoreError as exc:
            log(f"cannot keep verify's report in {run.store.shown} ({exc})")
    return report


def _report(
    client: Client,
    run: _Run,
    found: Discovered,
    seconds: float,
    compile_times: dict[str, float],
    sample: int | None,
    seed: int | None,
    min_captured: int,
) -> dict[str, Any]:
    threads = sum(client.nthreads().values()) or 1
    layers = [run.results[layer] for layer in sorted(run.checked, key=lambda l: (-sum(l), l))]
    positions = sum(r.checked for r in layers)
    # This run's own rate: the layers taken from earlier runs' records took none of its time.
    now = sum(r.checked for r in layers if r.spec.layer not in run.skipped)
    failures = sum(r.fault_count for r in layers) + len(run.other_faults)
    passed = failures == 0 and all(r.passed for r in layers)
    report: dict[str, Any] = {
        "url": run.store.shown,
        "variant": found.variant.as_dict(),
        "mode": "sample" if sample else "full",
        "sample": sample,
        "seed": seed if sample else None,
        "min_captured": min_captured,
        "manifest": run.manifest is not None,
        "distances": run.use_dtz,
        "passed": passed,
        "proof": passed and run.use_dtz and sample is None,
        "layers_checked": len(layers),
        "layers_from_earlier_runs": len(run.skipped),
        "positions_checked": positions,
        "failures": failures,
        "seconds": round(seconds, 3),
        "compile_seconds": round(max(compile_times.values(), default=0.0), 3),
        "cpu_seconds": round(run.cpu_seconds, 3),
        "threads": threads,
        "positions_per_second": round(now / seconds) if seconds else 0,
        "positions_per_core_second": round(positions / run.cpu_seconds) if run.cpu_seconds else 0,
        "other_faults": run.other_faults,
        "layers": [r.as_dict() for r in layers],
        "lines": run.lines,
    }
    report["summary"] = summary_line(report)
    return report


def summary_line(report: dict[str, Any]) -> str:
    failed = [l for l in report["layers"] if not l["passed"]]
    head = (
        f"verified {counted(report['layers_checked'], 'layer')}, {report['positions_checked']:,} positions"
        + (
            f" ({counted(report['layers_from_earlier_runs'], 'layer')} by earlier runs on the same files)"
            if report.get("layers_from_earlier_runs")
            else ""
        )
        + " in "
        f"{report['seconds']:.1f}s on {report['threads']} thread{'s' if report['threads'] != 1 else ''} "
        f"({report['positions_per_core_second']:,} "
        f"positions per core-second: {report['cpu_seconds']:.1f} CPU seconds in the verify tasks): "
    )
    if not report["passed"]:
        return head + (
            f"FAILED, {report['failures']:,} failure{'s' if report['failures'] != 1 else ''} in "
            f"{len(failed)} layer{'s' if len(failed) != 1 else ''}."
        )
    if report["mode"] == "sample":
        return head + (
            f"PASSED on {report['sample']:,} random positions per layer (seed {report['seed']}): "
            "a sample, not a proof; headers and sizes checked, not sha256."
        )
    if report["proof"]:
        return head + (
            "PASSED with distance tables: every value is proved from the rules "
            "(each WIN and LOSS by a strictly shorter line, each DRAW by its moves)."
        )
    why = "no manifest, so file sizes and sha256 were not checked; " if not report["manifest"] else ""
    return head + (
        f"PASSED, win/draw/loss only: {why}a pass shows the values are consistent, not that "
        "they are right (a tablebase solved with --dtz can be proved)."
    )


def failure_lines(report: dict[str, Any], per_layer: int = MAX_FAULTS) -> list[str]:
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
