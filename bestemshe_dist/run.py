"""Turn a plan into Dask work and drive it to a published tablebase.

The graph: one solve task per pair (`pair-<a>-<b>`) that takes the publish tasks
of the layers its captures reach as arguments, and one publish task per layer
(`layer-<k1>-<k2>`) after its pair. Dask runs independent pairs in parallel on
different workers; workers read dependency layers from the store, so the driver
only ever holds manifest entries.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from distributed import Client, as_completed

from .plan import Plan, layer_key
from .store import manifest_key
from .tasks import Job, publish_layer_task, solve_pair_task, warm_up


@dataclass
class SolveSummary:
    layers_solved: int
    layers_skipped: int
    positions: int
    seconds: float
    compile_seconds: float


def published_layers(store, manifest: dict, layers) -> dict:
    """Layers already published: manifest entry present and both files of the
    recorded sizes in place. Returns {layer: entry}."""
    done = {}
    for k1, k2 in layers:
        entry = manifest["layers"].get(manifest_key(k1, k2))
        if entry is None:
            continue
        names = {kind: f"layer_{k1}_{k2}_{kind}.bin" for kind in ("win", "draw")}
        if all(store.exists(n) and store.size(n) == entry["bytes"][kind] for kind, n in names.items()):
            done[(k1, k2)] = entry
    return done


def solve(client: Client, job: Job, plan: Plan, log=lambda line: None) -> SolveSummary:
    start = time.perf_counter()
    store = job.store()
    store.ensure_root()
    manifest = store.open_manifest(job.variant)
    done = published_layers(store, manifest, plan.layers)
    if not store.exists("manifest.json"):
        store.write_manifest(manifest)  # fail early, before any solving, if unwritable

    compile_times = client.run(warm_up)
    compile_seconds = max(compile_times.values()) if compile_times else 0.0
    log(f"kernels ready on {len(compile_times)} workers in {compile_seconds:.1f}s")

    layer_futures = {}
    todo = [p for p in plan.pairs if not all(layer in done for layer in p.layers)]
    for pair in todo:
        dep_futures = [layer_futures[d] for d in pair.deps if d in layer_futures]
        dep_shas = {d: done[d]["sha256"]["win"] for d in pair.deps if d in done}
        solved = client.submit(
            solve_pair_task, job, pair, dep_shas, *dep_futures, key=pair.key, pure=False, retries=1
        )
        for layer in pair.layers:
            layer_futures[layer] = client.submit(
                publish_layer_task, job, layer, solved, key=layer_key(*layer), pure=False, retries=1
            )
    skipped = len(plan.layers) - len(layer_futures)
    if skipped:
        log(f"{skipped} layers already published, skipped")
    total = len(layer_futures)
    positions = 0
    try:
        for count, future in enumerate(as_completed(list(layer_futures.values())), 1):
            entry = future.result()
            manifest["layers"][manifest_key(entry["k1"], entry["k2"])] = entry
            store.write_manifest(manifest)  # after the layer's files: the entry comes last
            positions += entry["positions"]
            c = entry["counts"]
            log(
                f"layer {entry['k1']}_{entry['k2']} done ({count}/{total}): "
                f"{entry['positions']:,} positions, win {c['win']:,} draw {c['draw']:,} "
                f"loss {c['loss']:,}, {entry['rounds']} rounds, {entry['solve_seconds']:.2f}s"
            )
    except BaseException:
        # Stop the rest of the graph; what was published stays valid for a rerun.
        client.cancel(list(layer_futures.values()))
        raise
    return SolveSummary(
        layers_solved=total,
        layers_skipped=skipped,
        positions=positions,
        seconds=time.perf_counter() - start,
        compile_seconds=compile_seconds,
    )
