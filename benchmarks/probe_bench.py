"""How fast the oracle answers: cold probes, probes of cached blocks, best moves.

    python benchmarks/probe_bench.py TABLEBASE [--probes 20000] [--json]

TABLEBASE is a folder or URL (a solved tablebase, or the published files). Random
positions of the layers present are drawn once; the same positions are probed
cold (a fresh Tablebase each, so headers and blocks are read), then again with
the blocks cached, then asked for a best move. Prints microseconds per call and
calls per second.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time


def layers_present(tb) -> list[tuple[int, int]]:
    if tb.manifest is not None:
        return sorted((e["k1"], e["k2"]) for e in tb.manifest["layers"].values())
    names = tb.store.fs.ls(tb.store.root or ".", detail=False)
    found = {tuple(map(int, m.groups())) for m in
             (re.search(r"layer_(\d+)_(\d+)_win\.bin$", str(n)) for n in names) if m}
    return sorted(found)


def main() -> int:
    from bestemshe_dist.oracle.tablebase import Tablebase
    from bestemshe_dist.game.position import Position

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--probes", type=int, default=20000)
    ap.add_argument("--cold", type=int, default=50, help="cold probes (fresh Tablebase each)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    tb = Tablebase.open(args.url)
    layers = layers_present(tb)
    if not layers:
        print(f"probe_bench: no layer files in {tb.url}", file=sys.stderr)
        return 1
    rng = random.Random(args.seed)
    v = tb.variant
    positions = []
    for _ in range(args.probes):
        k1, k2 = rng.choice(layers)
        positions.append(Position.from_rank(v, k1, k2, rng.randrange(v.layer_size(k1, k2))))

    start = time.perf_counter()
    for p in positions[: args.cold]:
        Tablebase.open(args.url).probe(p)
    cold = (time.perf_counter() - start) / args.cold

    for p in positions:  # load every block the positions need
        tb.probe(p)
    start = time.perf_counter()
    for p in positions:
        tb.probe(p)
    warm = (time.perf_counter() - start) / len(positions)

    sample = positions[: max(1, len(positions) // 10)]
    for p in sample:
        tb.best_move(p)
    start = time.perf_counter()
    for p in sample:
        tb.best_move(p)
    best = (time.perf_counter() - start) / len(sample)

    result = {"url": tb.url, "layers": len(layers), "probes": len(positions),
              "cold_probe_us": round(cold * 1e6, 1), "cached_probe_us": round(warm * 1e6, 2),
              "cached_probes_per_second": round(1 / warm), "best_move_us": round(best * 1e6, 1),
              "cached_bytes": tb.cached_bytes}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"{tb.url}: {len(layers)} layers, {len(positions):,} random positions")
        print(f"  cold probe (headers + one block read):  {result['cold_probe_us']:>10,.1f} us")
        print(f"  probe of a cached block:                {result['cached_probe_us']:>10,.2f} us "
              f"({result['cached_probes_per_second']:,}/s)")
        print(f"  best move (every child probed, cached): {result['best_move_us']:>10,.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
