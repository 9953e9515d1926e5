"""Speed and memory at every size, on synthetic dependency layers (solve --synthetic-deps).

    python benchmarks/scale_bench.py [--pair A B | --from-captured 28 --to-captured 2]
                                     [--rounds 3] [--workers W] [--threads-per-worker T]
                                     [--chunk-size N] [--dtz] [--hosts H] [--cores C] [--json]

Each pair is solved for its first --rounds rounds through the same chunked Dask
path as a real solve, by the method the solve gives it (--method, default
counting: round 0 counts every position's moves, the next rounds walk the
un-moves of the last round's decisions; frontier: round 0 is a sweep, the next
ones re-evaluate predecessors), on a fresh local cluster, with dependency
layers made on the workers (no store needed). Per pair it prints: the method,
positions, dependency positions, per round its kind, seconds, positions
decided, evaluated and (counting) un-moves walked, and the rate per
core-second, the bytes each worker read from the store; the peak RSS of each
worker and the host's peak memory (what /proc/meminfo says the machine used
above what it used before the cluster started), each in bits per position of
the pair and its dependencies; and what memory.py predicted.

Then a projection of the whole game from the measured rates, each pair by the
method memory.py gives it on a host of --host-memory (default: this machine's
RAM). By counting a pair costs its positions once at the measured round-0 rate
plus WALKED_SHARE of its positions (every decided position is walked once, in
the round after its decision) at the measured walk rate (sources per
core-second); by frontier its positions once at the sweep rate plus
FRONTIER_EVALUATIONS per position at the frontier rate (the frontier rounds of
the real solves of k1 + k2 >= 28 evaluate 0.92 positions per position after
round 0). Publication adds PUBLISH_CORE_SECONDS per position (level-19
win/draw files), and with --dtz DTZ_CORE_SECONDS more (the distance files,
each rebuilt from every round's checkpoints). The rates of the nearest
measured pair are used for each pair of the plan. On this machine that is the
sum over pairs divided by its cores;
on --hosts H x --cores C, each level of the plan (one k1 + k2; a level's pairs
need only higher levels) takes its work over H x C cores, but never less than
ROUNDS_PER_PAIR rounds of ROUND_FLOOR_SECONDS each (the tail of a pair is dozens
of rounds that decide a few positions each and cost a round trip of the
scheduler), with each host holding the largest pair's memory. Both are lower
bounds where pairs wait on one another: the solve of k1 + k2 >= 16 by the
frontier method took 1.36 times its projection (tail rounds waiting behind
other pairs' large rounds).

The acceptance run: python benchmarks/scale_bench.py --pair 6 10 --rounds 3 --workers 1
--threads-per-worker 2 --json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from bestemshe_dist.cluster import connect
from bestemshe_dist.data.store import Store, completed_rounds
from bestemshe_dist.game.dag import make_plan, pair_plan, single_pair_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run.driver import DEFAULT_CHUNK_SIZE, solve
from bestemshe_dist.run.memory import GiB, method_on, pair_memory, plan_peak
from bestemshe_dist.run.tasks import Job
from bestemshe_dist.solve.pair import COUNTING

FRONTIER_EVALUATIONS = 0.92
# Every decided position is walked once (draws never are: an upper bound).
WALKED_SHARE = 1.0
# Publication, core-seconds per position: level-19 win/draw files (pair 8-12's
# 4.24e8 positions: 54.8 core-seconds), and the distance files at DTZ_LEVEL,
# rebuilt from the checkpoints (pair 8-12 through the CLI with --dtz: 146.1 s
# against 139.9 s on 2 cores, about 12.4 core-seconds more).
PUBLISH_CORE_SECONDS = 1.29e-7
DTZ_CORE_SECONDS = 2.9e-8
# The counting solve of k1 + k2 >= 16 (one worker, 2 threads): pairs took 46-97
# rounds, and its 732 rounds deciding under 1,000 positions took 0.39 s each (median,
# beside other pairs' large rounds; a pair alone: 0.06 s).
ROUNDS_PER_PAIR = 85
ROUND_FLOOR_SECONDS = 0.39


def used_total_gib() -> float:
    """This machine's RAM (MemTotal), GiB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024 / GiB
    return 24.0


def used_bytes() -> int:
    """What the machine uses: MemTotal - MemAvailable (shared memory included)."""
    info = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, value = line.split(":", 1)
        info[key] = int(value.split()[0]) * 1024
    return info["MemTotal"] - info["MemAvailable"]


class Sampler:
    """The machine's peak use above a baseline, sampled every 50 ms in a thread."""

    def __init__(self):
        self.base = used_bytes()
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, used_bytes() - self.base)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, used_bytes() - self.base)
        return self.peak


def run_pair(variant: Variant, a: int, b: int, args) -> dict:
    pair = pair_plan(variant, a, b)
    cores = args.workers * args.threads_per_worker
    with tempfile.TemporaryDirectory(prefix="bestemshe-scale-") as out:
        job = Job(out, variant, method=args.method, dtz=args.dtz, synthetic=args.seed)
        sampler = Sampler()
        start = time.perf_counter()
        with connect(None, args.workers, args.threads_per_worker, dashboard_address=None) as client:
            summary = solve(
                client,
                job,
                single_pair_plan(variant, a, b),
                chunk_size=args.chunk_size,
                stop_after_rounds=args.rounds,
            )
        wall = time.perf_counter() - start
        host_peak = sampler.stop()
        markers = completed_rounds(Store(out), pair.key)
    rounds, previous_decided = [], None
    for m in markers:
        kind = rate_kind(m["mode"], m["round"])
        if kind in ("sweep", "count"):
            evaluated = m["evaluations"]
        elif kind == "walk":  # the sources walked: the previous round's decisions
            evaluated = previous_decided or 0
        else:  # sources (the previous round's decisions) and the predecessors re-checked
            evaluated = (previous_decided or 0) + m["evaluations"]
        rounds.append(
            {
                "round": m["round"],
                "mode": m["mode"],
                "kind": kind,
                "seconds": round(m["seconds"], 3),
                "decided": m["decided"],
                "evaluated": evaluated,
                "unmoves": m.get("unmoves", 0),
                "positions_per_core_second": round(evaluated / (m["seconds"] * cores)) if m["seconds"] else 0,
                "store_bytes_read_per_worker": m.get("store_bytes_read", {}),
                "task_bytes": m.get("task_bytes", 0),
            }
        )
        previous_decided = m["decided"]
    by_mode = {}
    for kind in ("sweep", "frontier", "count", "walk"):
        chosen = [r for r in rounds if r["kind"] == kind]
        seconds = sum(r["seconds"] for r in chosen)
        if chosen and seconds:
            by_mode[kind] = round(sum(r["evaluated"] for r in chosen) / (seconds * cores))
    method = markers[0]["mode"] if markers and markers[0]["mode"] == COUNTING else "frontier"
    predicted = pair_memory(variant, pair, args.chunk_size, cores, args.workers, method=method)
    walked = sum(r["evaluated"] for r in rounds if r["kind"] == "walk")
    held = pair.positions + pair.dep_positions
    rss = max(summary.worker_peak_rss.values()) if summary.worker_peak_rss else 0
    reads = [
        sum(r["store_bytes_read_per_worker"].values()) / max(1, len(r["store_bytes_read_per_worker"]))
        for r in rounds
    ]
    return {
        "pair": pair.key,
        "method": method,
        "positions": pair.positions,
        "dep_positions": pair.dep_positions,
        "rounds": rounds,
        "wall_seconds": round(wall, 2),
        "positions_per_core_second": by_mode,
        "evaluations_per_position": round(sum(m["evaluations"] for m in markers) / pair.positions, 3),
        "unmoves_per_position": round(sum(r["unmoves"] for r in rounds) / pair.positions, 3),
        "unmoves_per_walked_position": round(sum(r["unmoves"] for r in rounds) / walked, 3)
        if walked
        else None,
        "peak_rss_bytes": rss,
        "peak_rss_per_worker": summary.worker_peak_rss,
        "rss_bits_per_position": round(8 * rss / held, 3),
        "host_peak_bytes": host_peak,
        "host_bits_per_position": round(8 * host_peak / held, 3),
        "shared_bytes_held": summary.host_memory_peak,
        "predicted_host_bytes": predicted.total,
        "store_bytes_read_per_round": [round(x) for x in reads],
        "workers": args.workers,
        "threads_per_worker": args.threads_per_worker,
        "dtz": args.dtz,
        "chunk_size": args.chunk_size,
    }


def rate_kind(mode: str, round_: int) -> str:
    """What a round's rate measures: a counting round 0 counts every position
    ("count"), a later one walks the last round's decisions ("walk")."""
    if mode == COUNTING:
        return "count" if round_ == 0 else "walk"
    return mode


def project(
    variant: Variant,
    results: list,
    cores_here: int,
    hosts: int,
    cores: int,
    chunk_size: int,
    dtz: bool = False,
    host_memory: int | None = None,
) -> dict:
    """The whole game from the measured rates (see the module doc)."""
    plan = make_plan(variant)

    def rates(positions, method):
        same = [r for r in results if r.get("method", "frontier") == method] or results
        nearest = min(same, key=lambda r: abs(r["positions"] - positions))
        got = nearest["positions_per_core_second"]
        if method == COUNTING and got.get("count"):
            return got["count"], got.get("walk") or got["count"]
        sweep = got.get("sweep") or got.get("count") or 1.0
        return sweep, got.get("frontier") or sweep

    work = 0.0
    by_level: dict = {}
    methods: dict = {}
    for p in plan.pairs:
        method = method_on(variant, p, chunk_size, cores_here, 1, host_memory)
        methods[method] = methods.get(method, 0) + 1
        first, later = rates(p.positions, method)
        share = WALKED_SHARE if method == COUNTING else FRONTIER_EVALUATIONS
        cost = p.positions / first + share * p.positions / later
        cost += p.positions * (PUBLISH_CORE_SECONDS + (DTZ_CORE_SECONDS if dtz else 0.0))
        work += cost
        by_level[p.captured] = by_level.get(p.captured, 0.0) + cost
    floor = ROUNDS_PER_PAIR * ROUND_FLOOR_SECONDS
    cluster_seconds = sum(max(level / (hosts * cores), floor) for level in by_level.values())
    peak_here = plan_peak(plan, chunk_size, cores_here, 1, host_memory)
    peak_cluster = plan_peak(plan, chunk_size, cores, 1, host_memory)
    return {
        "dtz": dtz,
        "methods": methods,
        "core_seconds": round(work),
        "this_machine": {
            "cores": cores_here,
            "hours": round(work / cores_here / 3600, 2),
            "peak_host_bytes": peak_here.total,
        },
        "cluster": {
            "hosts": hosts,
            "cores_per_host": cores,
            "hours": round(cluster_seconds / 3600, 3),
            "levels": len(by_level),
            "peak_host_bytes": peak_cluster.total,
        },
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", type=int, nargs=2, metavar=("A", "B"))
    parser.add_argument("--from-captured", type=int, default=28, help="largest k1 + k2 to run (default 28)")
    parser.add_argument("--to-captured", type=int, default=2, help="smallest k1 + k2 to run (default 2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads-per-worker", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dtz", action="store_true", help="distance tables too (and in the projection)")
    parser.add_argument("--method", choices=("counting", "frontier"), default="counting")
    parser.add_argument(
        "--host-memory",
        type=float,
        default=used_total_gib(),
        metavar="GIB",
        help="each host's memory in the projection's choice of method (default: this machine's RAM)",
    )
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--cores", type=int, default=32)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    variant = Variant(50, 5)
    if args.pair:
        pairs = [tuple(args.pair)]
    else:  # one pair per k1 + k2, the one with the most positions
        by_m = {}
        for p in make_plan(variant, args.to_captured).pairs:
            if p.captured <= args.from_captured and p.positions > by_m.get(p.captured, (None, 0))[1]:
                by_m[p.captured] = ((p.a, p.b), p.positions)
        pairs = [by_m[m][0] for m in sorted(by_m, reverse=True)]
    results = []
    for a, b in pairs:
        result = run_pair(variant, a, b, args)
        results.append(result)
        if not args.json:
            print(line_of(result), flush=True)
    report = {
        "pairs": results,
        "projection": project(
            variant,
            results,
            args.workers * args.threads_per_worker,
            args.hosts,
            args.cores,
            args.chunk_size,
            args.dtz,
            int(args.host_memory * GiB),
        ),
    }
    if len(results) == 1:
        report.update({k: v for k, v in results[0].items() if k != "rounds"}, rounds=results[0]["rounds"])
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        p = report["projection"]
        print(
            f"whole game{' with --dtz' if p['dtz'] else ''}, projected ({p['methods']}): "
            f"{p['core_seconds']:,} core-seconds: {p['this_machine']['hours']} h on "
            f"this machine ({p['this_machine']['cores']} cores, at most "
            f"{p['this_machine']['peak_host_bytes'] / GiB:.1f} GiB), {p['cluster']['hours']} h on "
            f"{p['cluster']['hosts']} hosts x {p['cluster']['cores_per_host']} cores (at most "
            f"{p['cluster']['peak_host_bytes'] / GiB:.1f} GiB per host)"
        )
    return 0


def line_of(r: dict) -> str:
    rates = ", ".join(f"{k} {v / 1e6:.2f}M" for k, v in r["positions_per_core_second"].items())
    return (
        f"{r['pair']:<11} {r['method']:<8} {r['positions']:>15,} positions {r['dep_positions']:>15,} deps  "
        f"{len(r['rounds'])} rounds {r['wall_seconds']:8.1f}s  per core-second: {rates}  "
        f"{r['evaluations_per_position']} evaluations, {r['unmoves_per_position']} un-moves a position  "
        f"peak RSS {r['peak_rss_bytes'] / GiB:.2f} GiB ({r['rss_bits_per_position']} bits/pos), "
        f"host {r['host_peak_bytes'] / GiB:.2f} GiB ({r['host_bits_per_position']} bits/pos), "
        f"predicted {r['predicted_host_bytes'] / GiB:.2f} GiB; store read per worker per round "
        f"{[f'{x / 2**20:.1f} MiB' for x in r['store_bytes_read_per_round']]}"
    )


if __name__ == "__main__":
    sys.exit(main())
