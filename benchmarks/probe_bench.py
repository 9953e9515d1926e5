"""How fast the oracle answers: cold probes, probes of cached blocks, best moves, batches.

    python benchmarks/probe_bench.py TABLEBASE [--probes 20000] [--batch 1000000] [--json]

TABLEBASE is a folder or URL (a solved tablebase, or the published files). Random
positions of the layers present are drawn once; the same positions are probed
cold (a fresh Tablebase each, so headers and blocks are read), then again with
the blocks cached, then asked for a best move. Then `--batch` random positions
go through probe_many, on a fresh Tablebase (blocks read as needed) and again
(blocks cached), and must equal one-by-one probes of the first 2,000. Prints
microseconds per call and calls (positions) per second.
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
    found = {
        tuple(map(int, m.groups()))
        for m in (re.search(r"layer_(\d+)_(\d+)_win\.bin$", str(n)) for n in names)
        if m
    }
    return sorted(found)


def main() -> int:
    from bestemshe_dist.game.position import Position
    from bestemshe_dist.oracle.tablebase import Tablebase

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--probes", type=int, default=20000)
    ap.add_argument("--cold", type=int, default=50, help="cold probes (fresh Tablebase each)")
    ap.add_argument("--batch", type=int, default=1_000_000, help="positions for probe_many")
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

    import numpy as np

    from bestemshe_dist.game import rules

    nrng = np.random.default_rng(args.seed)
    rows = np.empty((args.batch, 2 + v.board), np.int64)
    board = np.empty(v.board, np.int64)
    for i, which in enumerate(nrng.integers(len(layers), size=args.batch).tolist()):
        k1, k2 = layers[which]
        rules.unrank(int(nrng.integers(v.layer_size(k1, k2))), v.board_stones(k1, k2), v.binom, board)
        rows[i, :2] = k1, k2
        rows[i, 2:] = board
    fresh = Tablebase.open(args.url)
    fresh.probe_many(rows[:1])  # compiles rank_rows (numba's cache, first time only)
    fresh = Tablebase.open(args.url)
    start = time.perf_counter()
    batch = fresh.probe_many(rows)
    batch_cold = time.perf_counter() - start
    start = time.perf_counter()
    fresh.probe_many(rows)
    batch_warm = time.perf_counter() - start
    if [batch[i] for i in range(min(2000, args.batch))] != [tb.probe(r.tolist()) for r in rows[:2000]]:
        print("probe_bench: probe_many differs from probe", file=sys.stderr)
        return 1

    result = {
        "url": tb.url,
        "layers": len(layers),
        "probes": len(positions),
        "batch": args.batch,
        "probe_many_per_second_cold": round(args.batch / batch_cold),
        "probe_many_per_second": round(args.batch / batch_warm),
        "cold_probe_us": round(cold * 1e6, 1),
        "cached_probe_us": round(warm * 1e6, 2),
        "cached_probes_per_second": round(1 / warm),
        "best_move_us": round(best * 1e6, 1),
        "cached_bytes": tb.cached_bytes,
    }
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"{tb.url}: {len(layers)} layers, {len(positions):,} random positions")
        print(f"  cold probe (headers + one block read):  {result['cold_probe_us']:>10,.1f} us")
        print(
            f"  probe of a cached block:                {result['cached_probe_us']:>10,.2f} us "
            f"({result['cached_probes_per_second']:,}/s)"
        )
        print(f"  best move (every child probed, cached): {result['best_move_us']:>10,.1f} us")
        print(
            f"  probe_many, {args.batch:,} positions:     {result['probe_many_per_second']:>10,} positions/s "
            f"(blocks cached; {result['probe_many_per_second_cold']:,}/s reading them)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
