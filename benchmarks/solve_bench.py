"""The methods against each other on the same layers, and the CLI's whole solve
against the sum of its pairs alone, in one run.

    python benchmarks/solve_bench.py --stones 50 --min-captured 28 [--methods counting,frontier,sweep]
                                     [--cli [--workers W]] [--json]

Each method solves the layers of the plan in memory, pair by pair in DAG order,
on one core, in its own process (so peak RSS is its own); kernels are compiled
before timing; each pair's layers are then encoded as the published files are
(level 19), timed apart. Prints per pair and in total: positions, position
evaluations, rounds, wall time, positions per core-second, and the ratios
between methods; checks that all methods decide every position the same way.

--cli then runs `bestemshe-dist solve` on the same plan with the defaults and
measures its schedule: with each pair's time alone (the first method's solve
plus its encoding), the work is their sum and the critical path the longest
chain of pairs on the DAG (Plan.remaining_paths); a solve that keeps every core
busy on the critical path first takes at most the critical path plus the work
divided by the cores. Prints the CLI's wall time (and from its kernels being
ready) over that bound.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_one(stones: int, pits: int, min_captured: int, method: str) -> dict:
    from bestemshe_dist.data.layer_files import encode_layer
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
        t0 = time.perf_counter()
        for c in result.codes.values():
            encode_layer(c, pair.layer_size)
        publish = time.perf_counter() - t0
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
                "publish_seconds": publish,
            }
        )
        # Keep only what later pairs still read: the memory a worker would hold.
        needed = {d for p in plan.pairs[i + 1 :] for d in p.deps}
        for layer in list(codes):
            if layer not in needed:
                del codes[layer]
    total = time.perf_counter() - start - sum(p["publish_seconds"] for p in pairs)
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
    ap.add_argument("--methods", default="counting,frontier")
    ap.add_argument("--cli", action="store_true", help="also the CLI's whole solve against its pairs alone")
    ap.add_argument("--workers", type=int, default=None, help="the CLI's local workers (default: its own)")
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
    if "frontier" in results and "counting" in results:
        summary["frontier_over_counting_time"] = round(
            results["frontier"]["seconds"] / results["counting"]["seconds"], 3
        )
    if args.cli:
        summary["cli"] = through_cli(args, results[methods[0]]["pairs"])
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
        print(f"frontier is {summary['sweep_over_frontier_time']}x faster than sweep")
    if "frontier_over_counting_time" in summary:
        print(f"counting is {summary['frontier_over_counting_time']}x faster than frontier")
    print(f"identical values: {same}")
    if "cli" in summary:
        c = summary["cli"]
        print(
            f"CLI ({c['cores']} cores): {c['wall_seconds']:.1f} s ({c['solve_seconds']:.1f} s from kernels ready); "
            f"pairs alone ({methods[0]}, with encoding): work {c['work_seconds']:.1f} core-s, critical path "
            f"{c['critical_path_seconds']:.1f} s, bound {c['bound_seconds']:.1f} s; wall/bound "
            f"{c['wall_over_bound']} ({c['solve_over_bound']} from kernels ready)"
        )
    return 0 if same else 1


def through_cli(args, alone: list) -> dict:
    """The CLI's solve of the plan against the bound its pairs alone give (module doc)."""
    import os

    from bestemshe_dist.game.dag import make_plan
    from bestemshe_dist.game.variant import Variant

    plan = make_plan(Variant(args.stones, args.pits), args.min_captured)
    seconds = {p["pair"]: p["seconds"] + p["publish_seconds"] for p in alone}
    work = sum(seconds.values())
    critical = max(plan.remaining_paths(lambda p: seconds[p.key]).values())
    cores = args.workers or os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="bestemshe-solve-bench-") as out:
        cmd = [sys.executable, "-m", "bestemshe_dist", "solve", "--stones", str(args.stones)]
        cmd += ["--pits", str(args.pits), "--min-captured", str(args.min_captured), "--out", out]
        cmd += ["--dashboard-address", "none"] + (["--workers", str(args.workers)] if args.workers else [])
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"the CLI failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    ready = next(
        float(m.group(1))
        for m in (re.match(r"^\[\s*([0-9.]+)s\] kernels ready", line) for line in proc.stderr.splitlines())
        if m
    )
    bound = critical + work / cores
    return {
        "cores": cores,
        "wall_seconds": round(wall, 2),
        "solve_seconds": round(wall - ready, 2),
        "work_seconds": round(work, 2),
        "critical_path_seconds": round(critical, 2),
        "bound_seconds": round(bound, 2),
        "wall_over_bound": round(wall / bound, 3),
        "solve_over_bound": round((wall - ready) / bound, 3),
    }


if __name__ == "__main__":
    sys.exit(main())
