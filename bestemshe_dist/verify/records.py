"""A verification that survives interruptions: a record per layer that passed.

When every position of a layer has been checked and passed, verify writes
`.bestemshe/verified/<k1>_<k2>-dtz.json` (with distances; `-wdl` without)
beside the tablebase. The record is bound
to everything the check read: the sha256 of the layer's own files and of the
files of the layers its positions reach (its partner and its capture targets),
whether distances were checked, and the variant. A later run over the same
files skips the layer's positions and says so; any other file, mode or variant
makes the record void and the layer is checked again. The files themselves are
still checked against the manifest on every run (sizes, sha256, headers), so a
file changed after its record was written is found, and its record no longer
binds.

Records need a manifest (the sha256 they bind to come from it) and a store
that can be written; where either is missing every layer is checked every run.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..data.store import Store
from ..errors import StoreError
from ..game.variant import Variant
from ..naming import layer_name, verified_record
from .tasks import LayerSpec


def binding(
    variant: Variant, distances: bool, specs: dict[tuple[int, int], LayerSpec], reads: list[tuple[int, int]]
) -> dict[str, Any] | None:
    """What a layer's check depends on: the sha256 of every file of the layers in
    `reads` (itself, its partner, its capture targets), from their manifest
    entries; None when one has no recorded sha256 (no record can bind)."""
    kinds = ("win", "draw", "dtz") if distances else ("win", "draw")
    files: dict[str, Any] = {}
    for layer in sorted(set(reads)):
        entry = specs[layer].entry if layer in specs else None
        sha = (entry or {}).get("sha256")
        if not isinstance(sha, dict) or not all(sha.get(kind) for kind in kinds):
            return None
        files[layer_name(*layer)] = {kind: sha[kind] for kind in kinds}
    return {"variant": variant.as_dict(), "distances": distances, "files": files}


def read_record(store: Store, layer: tuple[int, int], bound: dict[str, Any]) -> dict[str, Any] | None:
    """The layer's record when it passed with exactly `bound`, else None."""
    name = verified_record(*layer, bound["distances"])
    try:
        if not store.exists(name):
            return None
        record = json.loads(store.read_bytes(name))
    except (StoreError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("binding") != bound or record.get("passed") is not True:
        return None
    return record


def write_record(store: Store, result: dict[str, Any], bound: dict[str, Any]) -> None:
    """Keep a passed layer's result (counts, positions, CPU time) with what it is bound to.
    Raises StoreError where the store cannot be written."""
    record = {
        "layer": result["layer"],
        "passed": True,
        "positions": result["positions"],
        "checked": result["checked"],
        "counts": result["counts"],
        "max_dtz": result["max_dtz"],
        "cpu_seconds": result["cpu_seconds"],
        "verified_at": round(time.time(), 3),
        "binding": bound,
    }
    name = verified_record(*_layer(result), bound["distances"])
    store.write_bytes(name, json.dumps(record, sort_keys=True).encode())


def _layer(result: dict[str, Any]) -> tuple[int, int]:
    return (int(result["k1"]), int(result["k2"]))
