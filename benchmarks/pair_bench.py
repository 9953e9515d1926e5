"""One pair in one process and through the CLI's Dask path, in one run.

    python benchmarks/pair_bench.py --pair 8 12 --deps DIR [--workers W --threads-per-worker T] [--json]
    python benchmarks/pair_bench.py --pair 6 10 --synthetic-deps 1 [--workers W --threads-per-worker T] [--json]

DIR is a folder this project solved that holds the pair's dependency layers
(for pair 8-12: `bestemshe-dist solve --min-captured 22 --out DIR`); with
--synthetic-deps they are made from a seed instead (solve --synthetic-deps).

1. One process, one core (a subprocess of its own, so its peak RSS is its own;
   kernels compiled before timing): the dependencies loaded, then the pair
   solved whole in memory with --method (pair.solve_pair; default counting,
   as the CLI's).
2. The CLI: `bestemshe-dist solve --pair A B --out TMP --workers W` in a
   subprocess, TMP holding a copy of DIR's dependency layers, timed from launch
   to exit: what a user waits for. Its log and manifest give the breakdown: start
   (cluster and compiled kernels), rounds (the pair's solve_seconds), publication
   (until the last layer is in place, gaps included) and exit.

Prints for each: the method, wall time, rounds, evaluations and un-moves per
position (counting walks un-moves; the other methods evaluate), positions per
core-second (of the wall time, on the cores it used), peak RSS (per worker for
the CLI); the CLI's breakdown; and the one-process/CLI ratio. Both must reach
the same win/draw/loss counts for each layer (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one_process(args) -> dict:
    """Child process: the pair solved whole in memory on one core."""
    from bestemshe_dist.data.blocks import read_layer_codes
    from bestemshe_dist.data.store import Store
    from bestemshe_dist.game.dag import pair_plan
    from bestemshe_dist.game.variant import Variant
    from bestemshe_dist.run.hostpair import fill_synthetic
    from bestemshe_dist.run.tasks import warm_up
    from bestemshe_dist.solve import code_arrays
    from bestemshe_dist.solve.pair import solve_pair

    warm_up(args.pits)
    variant = Variant(args.stones, args.pits)
    pair = pair_plan(variant, *args.pair)
    start = time.perf_counter()
    deps = {}
    for layer in pair.deps:
        codes = code_arrays.new_codes(variant.layer_size(*layer))
        if args.synthetic_deps is not None:
            fill_synthetic(variant, args.synthetic_deps, layer, codes)
        else:
            read_layer_codes(Store(args.deps), variant, *layer, codes)
        deps[layer] = codes
    loaded = time.perf_counter() - start
    marks = []
    start = time.perf_counter()
    result = solve_pair(
        variant,
        pair.a,
        pair.b,
        deps,
        method=args.method,
        on_round=lambda round_, deltas: marks.append(time.perf_counter() - start),
    )
    seconds = time.perf_counter() - start
    counts = {}
    for layer, codes in result.codes.items():
        wins, losses, undecided = code_arrays.count_codes(codes, variant.layer_size(*layer))
        counts[f"{layer[0]}_{layer[1]}"] = {"win": int(wins), "draw": int(undecided), "loss": int(losses)}
    round_seconds = [b - a for a, b in zip([0.0] + marks[:-1], marks)]
    return {
        "seconds": seconds,
        "load_seconds": loaded,
        "rounds": result.rounds,
        "modes": result.modes,
        "evaluations": int(result.evaluations),
        "unmoves": int(result.unmoves),
        "counts": counts,
        "round_seconds": [round(s, 3) for s in round_seconds],
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def copy_deps(src: Path, dst: Path, deps) -> None:
    """dst gets src's dependency layer files and a manifest that lists only them."""
    manifest = json.loads((src / "manifest.json").read_text())
    names = {f"{k1}_{k2}" for k1, k2 in deps}
    missing = sorted(names - set(manifest["layers"]))
    if missing:
        raise SystemExit(f"{src}: the manifest has no layer {missing[0]}, a dependency of this pair.")
    manifest["layers"] = {name: entry for name, entry in manifest["layers"].items() if name in names}
    dst.mkdir(parents=True, exist_ok=True)
    for name in names:
        for path in src.glob(f"layer_{name}[._]*"):
            shutil.copyfile(path, dst / path.name)
    (dst / "manifest.json").write_text(json.dumps(manifest, indent=1))


_STAMP = re.compile(r"^\[\s*([0-9.]+)s\] (.*)$")


def through_cli(args, out: Path) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "bestemshe_dist",
        "solve",
        "--stones",
        str(args.stones),
        "--pits",
        str(args.pits),
        "--pair",
        str(args.pair[0]),
        str(args.pair[1]),
        "--out",
        str(out),
        "--workers",
        str(args.workers),
        "--threads-per-worker",
        str(args.threads_per_worker),
        "--dashboard-address",
        "none",
        "--method",
        args.method,
    ]
    if args.synthetic_deps is not None:
        cmd += ["--synthetic-deps", str(args.synthetic_deps)]
    if args.dtz:
        cmd.append("--dtz")
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"the CLI failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    lines = [m.groups() for m in map(_STAMP.match, (proc.stdout + proc.stderr).splitlines()) if m]
    ready = next(float(t) for t, text in lines if text.startswith("kernels ready"))
    published = max(float(t) for t, text in lines if re.match(r"layer \d+_\d+ done", text))
    rss = next((text for _, text in lines if text.startswith("peak RSS per worker")), "")
    per_worker = [
        int(x.replace(",", "")) * 2**20 for x in re.findall(r"[\d,]+", rss.split(":", 1)[-1]) if x.strip(",")
    ]
    # "pair-8-12 round 3 (frontier, 40 of 540 chunks): 1,234 decided, about 5 left, 1.23s"
    per_round = [
        (m.group(1), float(m.group(2)))
        for _, text in lines
        for m in [re.match(r"pair-\d+-\d+ round \d+ \((\w+),.*, ([0-9.]+)s$", text)]
        if m
    ]
    # "pair-8-12: publishing after 75 rounds; its tasks' time: kernel 180.1, sources 6.3, sync 8.5 s; ..."
    phases = {}
    for _, text in lines:
        m = re.match(
            r"pair-\d+-\d+: publishing after \d+ rounds; its tasks' time: (.*) s; waited on flushes "
            r"([0-9.]+) s",
            text,
        )
        if m:
            phases = {k: float(v) for k, v in (item.rsplit(" ", 1) for item in m.group(1).split(", "))}
            phases["flush_wait"] = float(m.group(2))
    manifest = json.loads((out / "manifest.json").read_text())
    entries = [manifest["layers"][f"{k1}_{k2}"] for k1, k2 in args.layers]
    rounds = entries[0]["solve_seconds"]  # the pair's rounds, as the driver (or its one task) timed them
    return {
        "wall_seconds": wall,
        "start_seconds": ready,
        "rounds_seconds": rounds,
        "publish_seconds": published - ready - rounds,
        "after_seconds": wall - published,
        "rounds": entries[0]["rounds"],
        "evaluations": entries[0]["evaluations"],  # the pair's, in each entry
        "unmoves": entries[0].get("unmoves", 0),
        "method": entries[0]["method"],
        "counts": {f"{e['k1']}_{e['k2']}": e["counts"] for e in entries},
        "peak_rss_per_worker": per_worker,
        "round_modes": [mode for mode, _ in per_round],
        "round_seconds": [seconds for _, seconds in per_round],
        "task_phases": phases,
    }


def by_mode(modes, seconds) -> dict:
    """Seconds in sweep rounds and in frontier rounds."""
    out = {}
    for mode, s in zip(modes, seconds):
        out[mode] = round(out.get(mode, 0.0) + s, 2)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", type=int, nargs=2, required=True, metavar=("A", "B"))
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--deps", help="a folder this project solved that holds the pair's dependency layers")
    source.add_argument("--synthetic-deps", type=int, metavar="SEED")
    parser.add_argument("--method", choices=("counting", "frontier", "sweep"), default="counting")
    parser.add_argument(
        "--dtz", action="store_true", help="the CLI writes distance tables too (DIR must hold its deps')"
    )
    parser.add_argument("--stones", type=int, default=50)
    parser.add_argument("--pits", type=int, default=5)
    # The CLI's own default (one process, a thread per core) unless given.
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--threads-per-worker", type=int, default=None)
    parser.add_argument(
        "--skip-one-process", action="store_true", help="only the CLI (for the largest pairs)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args(argv)
    # what the CLI's local cluster does with what is given (with neither: one process,
    # a thread per core; with --workers W alone, W processes of one thread)
    from bestemshe_dist.cluster import local_cluster_kwargs

    cluster = local_cluster_kwargs(None, args.workers, args.threads_per_worker, dashboard_address="none")
    args.workers, args.threads_per_worker = cluster["n_workers"], cluster["threads_per_worker"]
    if args.one:
        print(json.dumps(one_process(args)))
        return 0

    from bestemshe_dist.game.dag import pair_plan
    from bestemshe_dist.game.variant import Variant

    variant = Variant(args.stones, args.pits)
    pair = pair_plan(variant, *args.pair)
    args.layers = pair.layers
    positions = pair.positions
    report = {
        "pair": pair.key,
        "positions": positions,
        "dep_positions": pair.dep_positions,
        "workers": args.workers,
        "threads_per_worker": args.threads_per_worker,
        "deps": "synthetic" if args.synthetic_deps is not None else "solved",
        "dtz": args.dtz,
    }
    if not args.skip_one_process:
        child = subprocess.run(
            [sys.executable, __file__, "--one", *(argv or sys.argv[1:])],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if child.returncode != 0:
            raise SystemExit(f"the one-process run failed: {child.stderr.strip()[-2000:]}")
        one = json.loads(child.stdout.strip().splitlines()[-1])
        report["one_process"] = {
            "seconds": round(one["seconds"], 2),
            "load_seconds": round(one["load_seconds"], 2),
            "rounds": one["rounds"],
            "sweep_rounds": one["modes"].count("sweep"),
            "method": args.method,
            "evaluations_per_position": round(one["evaluations"] / positions, 3),
            "unmoves_per_position": round(one["unmoves"] / positions, 3),
            "positions_per_core_second": round(positions / one["seconds"]),
            "peak_rss_bytes": one["peak_rss_bytes"],
            "round_seconds": one["round_seconds"],
            "counts": one["counts"],
        }
    with tempfile.TemporaryDirectory(prefix="bestemshe-pair-bench-") as tmp:
        out = Path(tmp) / "out"
        if args.deps:
            copy_deps(Path(args.deps), out, pair.deps)
        cli = through_cli(args, out)
    cores = args.workers * args.threads_per_worker
    report["cli"] = {
        "wall_seconds": round(cli["wall_seconds"], 2),
        "start_seconds": round(cli["start_seconds"], 2),
        "rounds_seconds": round(cli["rounds_seconds"], 2),
        "publish_seconds": round(cli["publish_seconds"], 2),
        "exit_seconds": round(cli["after_seconds"], 2),
        "rounds": cli["rounds"],
        "method": cli["method"],
        "evaluations_per_position": round(cli["evaluations"] / positions, 3),
        "unmoves_per_position": round(cli["unmoves"] / positions, 3),
        "positions_per_core_second": round(positions / (cli["wall_seconds"] * cores)),
        "round_positions_per_core_second": round(positions / max(cli["rounds_seconds"], 1e-9) / cores),
        "peak_rss_per_worker": cli["peak_rss_per_worker"],
        "counts": cli["counts"],
        "round_seconds": cli["round_seconds"],
        # the round tasks' seconds by phase, summed over threads, and the wall time
        # the rounds waited on flushes
        "task_phases": cli["task_phases"],
    }
    if "one_process" in report:
        report["one_process"]["mode_seconds"] = by_mode(one["modes"], one["round_seconds"])
    report["cli"]["mode_seconds"] = by_mode(cli["round_modes"], cli["round_seconds"])
    same = "one_process" not in report or report["one_process"]["counts"] == cli["counts"]
    report["identical_counts"] = same
    if "one_process" in report:
        report["cli_over_one_process_rate"] = round(
            report["cli"]["positions_per_core_second"] / report["one_process"]["positions_per_core_second"], 3
        )
    if args.json:
        print(json.dumps(report, indent=1))
        return 0 if same else 1
    print(
        f"{pair.key}: {positions:,} positions, {pair.dep_positions:,} in its dependencies ({report['deps']})"
    )
    if "one_process" in report:
        o = report["one_process"]
        print(
            f"  one process, 1 core, {o['method']}: {o['seconds']:.1f} s ({o['load_seconds']:.1f} s "
            f"loading before), {o['rounds']} rounds ({o['sweep_rounds']} sweeps), "
            f"{o['evaluations_per_position']} evaluations/position, {o['unmoves_per_position']} "
            f"un-moves/position, {o['positions_per_core_second'] / 1e6:.2f}M positions/core-s, "
            f"peak RSS {o['peak_rss_bytes'] / 2**20:,.0f} MiB"
        )
    c = report["cli"]
    print(
        f"  CLI, {args.workers} x {args.threads_per_worker}, {c['method']}: {c['wall_seconds']:.1f} s = start "
        f"{c['start_seconds']:.1f} + rounds {c['rounds_seconds']:.1f} + publication {c['publish_seconds']:.1f}"
        f" + exit {c['exit_seconds']:.1f}; {c['rounds']} rounds, {c['evaluations_per_position']} "
        f"evaluations/position, {c['unmoves_per_position']} un-moves/position, {c['positions_per_core_second'] / 1e6:.2f}M positions/core-s "
        f"({c['round_positions_per_core_second'] / 1e6:.2f}M in rounds), peak RSS per worker "
        f"{', '.join(f'{r / 2**20:,.0f}' for r in c['peak_rss_per_worker'])} MiB"
    )
    for name, row in (("one process", report.get("one_process")), ("CLI", c)):
        if row is not None:
            print(
                f"  {name}, seconds in rounds by kind: "
                + ", ".join(f"{mode} {s:.1f}" for mode, s in row["mode_seconds"].items())
            )
    if c["task_phases"]:
        print(
            "  CLI, round tasks' seconds by phase "
            "(summed over tasks; a counting round is one task on every thread): "
            + ", ".join(f"{k} {v:.1f}" for k, v in c["task_phases"].items() if k != "flush_wait")
            + f"; wall seconds waiting on flushes {c['task_phases'].get('flush_wait', 0.0):.1f}"
        )
    if "cli_over_one_process_rate" in report:
        print(f"  CLI rate / one-process rate: {report['cli_over_one_process_rate']}; same counts: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
