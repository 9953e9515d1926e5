"""`bestemshe-dist`: one command with subcommands. Errors are one line:
exit 2 for usage, 1 for failures."""
from __future__ import annotations

import argparse
import json
import sys
import time

from .errors import BestemsheError, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints usage + message)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _variant_args(p):
    p.add_argument("--stones", type=int, default=50, help="stones in the game (even; default 50)")
    p.add_argument("--pits", type=int, default=5, help="pits per side (1..5; default 5)")
    p.add_argument("--min-captured", type=int, default=0, metavar="M",
                   help="only the layers with k1 + k2 >= M (the endgame part)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bestemshe-dist", description="Distributed retrograde solver for Bestemshe.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("solve", help="solve layers into a tablebase folder")
    _variant_args(p)
    p.add_argument("--out", required=True, metavar="URL", help="output folder: path or fsspec URL")
    p.add_argument("--storage-options", default=None, metavar="JSON",
                   help="fsspec storage options for --out, as a JSON object")
    p.add_argument("--workers", type=int, default=None, help="local cluster workers (default: CPU count)")
    p.add_argument("--threads-per-worker", type=int, default=1)
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="use a running Dask scheduler instead of a local cluster")
    p.add_argument("--method", choices=("frontier", "sweep"), default="frontier",
                   help="frontier: re-evaluate only predecessors of new decisions (default); "
                        "sweep: re-evaluate every undecided position each round, like the original solver")
    p.add_argument("--dtz", action="store_true",
                   help="also write layer_<k1>_<k2>_dtz.bin: plies to the next capture or the end "
                        "under best play (1 byte a position, 2 if a layer needs it; draws store 0)")
    p.add_argument("--chunk-size", type=int, default=None, metavar="POSITIONS",
                   help="a pair whose layers are larger is solved as rounds of chunks of this many "
                        "positions spread over all workers (default 67,108,864: two 4 MiB blocks)")
    p.add_argument("--restart", action="store_true",
                   help="discard the checkpoints of pairs in progress (published layers are kept)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")

    p = sub.add_parser("plan", help="print the DAG of pairs and layers")
    _variant_args(p)
    return parser


def _storage_options(text):
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise UsageError("--storage-options is not valid JSON.") from None
    if not isinstance(value, dict):
        raise UsageError("--storage-options must be a JSON object.")
    return value


def _cmd_plan(args) -> int:
    from .plan import make_plan
    from .variant import Variant

    print(make_plan(Variant(args.stones, args.pits), args.min_captured).describe())
    return 0


def _cmd_solve(args) -> int:
    from .cluster import connect
    from .plan import make_plan
    from .run import DEFAULT_CHUNK_SIZE, solve
    from .store import redact
    from .tasks import Job
    from .variant import Variant

    variant = Variant(args.stones, args.pits)
    plan = make_plan(variant, args.min_captured)
    job = Job(url=args.out, variant=variant, storage_options=_storage_options(args.storage_options),
              method=args.method, dtz=args.dtz)
    start = time.perf_counter()

    def log(line):
        if not args.quiet:
            print(f"[{time.perf_counter() - start:8.1f}s] {line}", file=sys.stderr, flush=True)

    log(f"solving {len(plan.layers)} layers ({plan.positions:,} positions) of the "
        f"{variant.describe()} game into {redact(args.out)}")
    in_process = args.out.startswith("memory://")
    with connect(args.scheduler, args.workers, args.threads_per_worker, in_process) as client:
        summary = solve(client, job, plan, log, chunk_size=args.chunk_size or DEFAULT_CHUNK_SIZE,
                        restart=args.restart)
    rate = summary.positions / summary.seconds if summary.seconds else 0.0
    log(f"done: {summary.layers_solved} layers solved, {summary.layers_skipped} skipped, "
        f"{summary.positions:,} positions in {summary.seconds:.1f}s ({rate:,.0f} positions/s)")
    if summary.worker_peak_rss:
        peaks = ", ".join(f"{v / 2**20:,.0f}" for v in sorted(summary.worker_peak_rss.values()))
        log(f"peak RSS per worker (MiB): {peaks}")
    return 0


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return {"solve": _cmd_solve, "plan": _cmd_plan}[args.command](args)
    except UsageError as exc:
        print(f"bestemshe-dist {args.command}: {exc}", file=sys.stderr)
        return 2
    except BestemsheError as exc:
        print(f"bestemshe-dist {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"bestemshe-dist {args.command}: interrupted.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
