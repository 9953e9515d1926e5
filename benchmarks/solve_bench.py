"""Frontier rounds against the naive sweep, on the same layers, in one run.

    python benchmarks/solve_bench.py --stones 50 --min-captured 28 [--json]

Each method solves the layers of the plan in memory, pair by pair in DAG order,
on one core, in its own process (so peak RSS is its own); kernels are compiled
before timing. Prints per pair and in total: positions, position evaluations,
rounds, wall time, positions per core-second, and the frontier/sweep ratio;
checks that both methods decide every position the same way.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time


def run_one(stones: int, pits: int, min_captured: int, method: str) -> dict:
    from bestemshe_dist.game.dag import make_plan
    from bestemshe_dist.game.variant import Variant
    from bestemshe_dist.run.tasks import warm_up
    from bestemshe_dist.solve.pair import solve_pair

    warm_up(pits)
    variant = Variant(stones, pits)
    plan = make_plan(variant, min_captured)
    codes, pairs, digests = {}, [], {}
    start = time.perf_counter()
    for i, pair in enumerate(plan.pairs):
        t0 = time.perf_counter()
        result = solve_pair(variant, pair.a, pair.b, codes, method=method)
        seconds = time.perf_counter() - t0
        codes.update(result.codes)
        for layer, c in result.codes.items():
            digests[f"{layer[0]}_{layer[1]}"] = hashlib.sha256(c.tobytes()).hexdigest()
        pairs.append(
            {
                "pair": pair.key,
                "positions": pair.positions,
                "evaluations": result.evaluations,
                "rounds": result.rounds,
                "sweep_rounds": result.modes.count("sweep"),
                "seconds": seconds,
            }
        )
        # Keep only what later pairs still read: the memory a worker would hold.
        needed = {d for p in plan.pairs[i + 1 :] for d in p.deps}
        for layer in list(codes):
            if layer not in needed:
                del codes[layer]
    total = time.perf_counter() - start
    return {
        "method": method,
        "pairs": pairs,
        "seconds": total,
        "positions": plan.positions,
        "evaluations": sum(p["evaluations"] for p in pairs),
        "digests": digests,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stones", type=int, default=50)
    ap.add_argument("--pits", type=int, default=5)
    ap.add_argument("--min-captured", type=int, default=28)
    ap.add_argument("--methods", default="frontier,sweep")
    ap.add_argument("--json", action="store_true", help="one JSON document on stdout")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # child process: one method
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.stones, args.pits, args.min_captured, args.one)))
        return 0
    results = {}
    for method in args.methods.split(","):
        child = subprocess.run(
            [
                sys.executable,
                __file__,
                "--stones",
                str(args.stones),
                "--pits",
                str(args.pits),
                "--min-captured",
                str(args.min_captured),
                "--one",
                method,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        results[method] = json.loads(child.stdout.strip().splitlines()[-1])
    methods = list(results)
    same = len({json.dumps(r["digests"], sort_keys=True) for r in results.values()}) == 1
    summary = {
        "stones": args.stones,
        "pits": args.pits,
        "min_captured": args.min_captured,
        "identical": same,
        "methods": {},
    }
    for method, r in results.items():
        summary["methods"][method] = {
            "seconds": round(r["seconds"], 3),
            "positions": r["positions"],
            "evaluations": r["evaluations"],
            "evaluations_per_position": round(r["evaluations"] / r["positions"], 3),
            "positions_per_core_second": round(r["positions"] / r["seconds"]),
            "peak_rss_mib": round(r["peak_rss_bytes"] / 2**20, 1),
        }
    if "frontier" in results and "sweep" in results:
        summary["sweep_over_frontier_time"] = round(
            results["sweep"]["seconds"] / results["frontier"]["seconds"], 3
        )
    if args.json:
        summary["pairs"] = {m: r["pairs"] for m, r in results.items()}
        print(json.dumps(summary, indent=1))
        return 0 if same else 1
    head = f"{'pair':<12} {'positions':>12}" + "".join(
        f" | {m + ' s':>10} {'evals/pos':>9} {'rounds':>6} {'Mpos/s':>7}" for m in methods
    )
    print(head)
    print("-" * len(head))
    for i, p in enumerate(results[methods[0]]["pairs"]):
        row = f"{p['pair']:<12} {p['positions']:>12,}"
        for m in methods:
            q = results[m]["pairs"][i]
            row += (
                f" | {q['seconds']:>10.3f} {q['evaluations'] / q['positions']:>9.2f} {q['rounds']:>6}"
                f" {q['positions'] / max(q['seconds'], 1e-9) / 1e6:>7.2f}"
            )
        print(row)
    print("-" * len(head))
    for m, s in summary["methods"].items():
        print(
            f"{m:>9}: {s['seconds']:.2f} s, {s['positions']:,} positions, "
            f"{s['evaluations_per_position']} evaluations/position, "
            f"{s['positions_per_core_second'] / 1e6:.2f}M positions/core-second, peak RSS {s['peak_rss_mib']} MiB"
        )
    if "sweep_over_frontier_time" in summary:
        print(
            f"frontier is {summary['sweep_over_frontier_time']}x faster than sweep; identical values: {same}"
        )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
