"""`bestemshe-dist checksums URL`: write a tablebase's checksum sidecars, or check them.

For a tablebase that has none (the published dataset, or one solved before
sidecars existed) this computes them once, from a copy the user trusts, as
Syzygy users keep SHA256SUMS: every file is read whole, its header and frames
validated (each must decompress to one 4 MiB block), then
`layer_<k1>_<k2>.sums.json` is written beside it (checksums.py). Where the
tablebase has a manifest, each file must first match its recorded sha256, and
the manifest entry then records the sidecar, which makes it mandatory for every
reader. A sidecar already there is checked instead: equal is fine, different is
a failure unless --rewrite says the files are the ones to trust.

Files are read and hashed on a thread pool (zstandard and hashlib release the
GIL); layer data never goes further than one layer's files at a time per thread.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import BestemsheError, FormatError, StoreError, UsageError
from ..naming import (
    LAYER_FILE_GLOB,
    LEASE,
    counted,
    layer_file,
    layer_name,
    parse_layer_file,
    parse_layer_name,
    sums_file,
)
from . import format as fmt
from .checksums import HASH, FileSums, LayerSums, manifest_record
from .lease import stale_reason
from .store import Store, find_tablebase, read_json


def _layers(store: Store, manifest: dict[str, Any] | None) -> dict[tuple[int, int], list[str]]:
    """layer -> the kinds of file it has (win and draw first, dtz if present)."""
    found: dict[tuple[int, int], set[str]] = {}
    for name in store.list_names(LAYER_FILE_GLOB):
        parsed = parse_layer_file(name)
        if parsed:
            found.setdefault(parsed[:2], set()).add(parsed[2])
    for key, entry in (manifest or {}).get("layers", {}).items():
        layer = parse_layer_name(key)
        if layer is not None:  # verify reports an entry that names no layer
            found.setdefault(layer, set()).update((entry or {}).get("bytes", {}))
    order = {"win": 0, "draw": 1, "dtz": 2}
    return {layer: sorted(kinds, key=order.__getitem__) for layer, kinds in sorted(found.items())}


def _one_layer(
    store: Store, layer: tuple[int, int], kinds: list[str], entry: dict[str, Any] | None, rewrite: bool
) -> dict[str, Any]:
    """Read, validate and hash one layer's files; write or check its sidecar."""
    start = time.perf_counter()
    k1, k2 = layer
    result: dict[str, Any] = {
        "layer": layer_name(k1, k2),
        "files": len(kinds),
        "frames": 0,
        "bytes": 0,
        "action": None,
        "fault": None,
        "record": None,
    }
    try:
        sums: dict[str, FileSums] = {}
        for kind in kinds:
            name = layer_file(k1, k2, kind)
            shown = f"{store.shown}/{name}"
            data = store.read_bytes(name)
            want = ((entry or {}).get("sha256") or {}).get(kind)
            if entry is not None and hashlib.sha256(data).hexdigest() != want:
                raise FormatError(
                    f"{shown} does not match the sha256 its manifest records, so it is not "
                    "a copy to trust: no checksums were written for it."
                )
            fmt.decode_file(data, shown)  # every frame must be a whole 4 MiB block
            sums[kind] = FileSums.of_file(data, shown)
            result["frames"] += len(sums[kind].frames)
            result["bytes"] += len(data)
        made = LayerSums(layer, sums)
        sidecar = made.to_bytes()
        name = sums_file(k1, k2)
        existing = store.read_optional(name)
        same = False
        if existing is not None:
            try:
                same = LayerSums.from_bytes(existing, layer, f"{store.shown}/{name}").files == made.files
            except FormatError:
                if not rewrite:
                    raise
        if same:
            assert existing is not None  # `same` is only set by comparing with it
            result["action"] = "unchanged"
            result["record"] = manifest_record(made, existing)
        elif existing is not None and not rewrite:
            raise FormatError(
                f"{store.shown}/{name} does not match the layer's files (they changed since "
                "it was written, or one is damaged); --rewrite replaces it if these files "
                "are the copy to trust."
            )
        else:
            store.write_bytes(name, sidecar)
            result["action"] = "rewritten" if existing is not None else "written"
            result["record"] = manifest_record(made, sidecar)
    except (FormatError, StoreError) as exc:
        result["fault"] = str(exc)
    result["seconds"] = round(time.perf_counter() - start, 3)
    return result


def write_checksums(
    url: str,
    storage_options: dict[str, Any] | None = None,
    *,
    rewrite: bool = False,
    threads: int | None = None,
    log: Callable[[str], object] | None = None,
) -> dict[str, Any]:
    """Write (or check) the sidecar of every layer at `url`; `log` gets a line per
    layer. Returns the report; report["passed"] is False if any layer failed."""
    started = time.perf_counter()
    store = Store(url, storage_options)
    if {"http", "https"} & set(
        store.fs.protocol if isinstance(store.fs.protocol, tuple) else (store.fs.protocol,)
    ):
        raise UsageError(
            f"checksums writes files beside the layers, which {store.shown} cannot take: "
            "give the folder or the s3:// URL the files are served from."
        )
    manifest = find_tablebase(store)
    if manifest is not None and store.exists(LEASE):
        holder = read_json(store, LEASE)
        if stale_reason(holder) is None:
            raise BestemsheError(
                f"a solve (pid {holder.get('pid')} on {holder.get('host')}) is writing to "
                f"{store.shown}; run checksums after it ends."
            )
    layers = _layers(store, manifest)
    entries = (manifest or {}).get("layers", {})
    threads = threads or os.cpu_count() or 1
    results: list[dict[str, Any]] = []
    with ThreadPoolExecutor(threads) as pool:
        futures = [
            pool.submit(
                _one_layer,
                store,
                layer,
                kinds,
                entries.get(layer_name(*layer)) if manifest else None,
                rewrite,
            )
            for layer, kinds in layers.items()
        ]
        for future in futures:
            result = future.result()
            results.append(result)
            if log:
                log(line_of(result))
    if manifest is not None:
        changed = False
        for result in results:
            entry = entries.get(result["layer"])
            if entry is not None and result["record"] and entry.get("checksums") != result["record"]:
                entry["checksums"] = result["record"]
                changed = True
        if changed:
            store.write_manifest(manifest)  # the entries now require their sidecars
    failed = [r for r in results if r["fault"]]
    return {
        "url": store.shown,
        "hash": HASH,
        "manifest": manifest is not None,
        "layers": results,
        "written": sum(r["action"] in ("written", "rewritten") for r in results),
        "unchanged": sum(r["action"] == "unchanged" for r in results),
        "failed": len(failed),
        "passed": not failed,
        "seconds": round(time.perf_counter() - started, 3),
    }


def line_of(result: dict[str, Any]) -> str:
    if result["fault"]:
        return f"layer {result['layer']}: FAILED: {result['fault']}"
    what = {
        "written": "checksums written",
        "rewritten": "checksums rewritten",
        "unchanged": "checksums already there and matching",
    }[result["action"]]
    return (
        f"layer {result['layer']}: {what} ({counted(result['files'], 'file')}, {counted(result['frames'], 'block')}, "
        f"{result['bytes']:,} bytes)"
    )


def format_checksums_report(report: dict[str, Any]) -> str:
    return (
        f"{report['url']}: {counted(len(report['layers']), 'layer')}, {report['written']} written, "
        f"{report['unchanged']} unchanged, {report['failed']} failed ({report['hash']}, "
        f"{report['seconds']:.1f}s)" + ("" if report["passed"] else ": FAILED")
    )
