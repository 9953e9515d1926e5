"""The commands of a solve: solve, plan and status."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import BestemsheError, UsageError, first_line
from .args import (
    Subcommands,
    at_least_one,
    at_least_zero,
    cluster_args,
    config_and_output,
    dask_client,
    host_port,
    parse_storage_options,
    positive,
    storage_options_arg,
    variant_args,
)

if TYPE_CHECKING:
    from ..game.dag import Plan
    from ..game.variant import Variant


def add_parsers(sub: Subcommands) -> None:
    """solve, plan and status."""
    p = sub.add_parser("solve", help="solve layers into a tablebase folder")
    variant_args(p, min_captured_default=None)
    p.add_argument(
        "--out",
        default=None,
        metavar="URL",
        help="output folder: path or fsspec URL (default: storage url of --config)",
    )
    storage_options_arg(p, "--out")
    cluster_args(p)
    p.add_argument(
        "--method",
        choices=("counting", "frontier", "sweep"),
        default="counting",
        help="counting (default): keep each position's count of moves whose result is "
        "not yet known, so each move is generated once forward and once backward (a pair "
        "whose 3-bit states do not fit a host gets frontier); "
        "frontier: re-evaluate only predecessors of new decisions; "
        "sweep: re-evaluate every undecided position each round, like the original solver",
    )
    p.add_argument(
        "--dtz",
        action="store_true",
        help="also write layer_<k1>_<k2>_dtz.bin: plies to the next capture or the end "
        "under best play (1 byte a position, 2 if a layer needs it; draws store 0)",
    )
    p.add_argument(
        "--chunk-size",
        type=at_least_one,
        default=None,
        metavar="POSITIONS",
        help="a pair whose layers are larger is solved as rounds of chunks of this many "
        "positions spread over all workers (default 67,108,864: two 4 MiB blocks)",
    )
    p.add_argument(
        "--restart",
        action="store_true",
        help="discard the checkpoints of pairs in progress (published layers are kept)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar or lines")
    p.add_argument(
        "--dashboard-address",
        type=host_port,
        default="127.0.0.1:8787",
        metavar="HOST:PORT",
        help="the local cluster's Dask dashboard, with the solve's page /bestemshe "
        "(default 127.0.0.1:8787, a free port when taken; none: no dashboard)",
    )

    p.add_argument(
        "--pair",
        type=int,
        nargs=2,
        default=None,
        metavar=("A", "B"),
        help="solve just the pair of layers (A, B) and (B, A) (its dependency layers must be in "
        "--out, or made by --synthetic-deps)",
    )
    p.add_argument(
        "--synthetic-deps",
        type=at_least_zero,
        default=None,
        metavar="SEED",
        help="with --pair: dependency layers of deterministic pseudo-random values made on the "
        "workers (for runs at full size; the output is marked synthetic and can never join "
        "a real tablebase)",
    )
    p.add_argument(
        "--stop-after-rounds",
        type=at_least_one,
        default=None,
        metavar="N",
        help="stop each large pair after N rounds, unpublished (for measurements)",
    )

    p = sub.add_parser(
        "plan", help="print the DAG of pairs and layers, and the memory each pair needs per host"
    )
    variant_args(p)
    p.add_argument(
        "--chunk-size",
        type=at_least_one,
        default=None,
        metavar="POSITIONS",
        help="as solve's (default 67,108,864)",
    )
    p.add_argument(
        "--threads",
        type=at_least_one,
        default=None,
        help="tasks running at once on a host (default: this machine's cores)",
    )
    p.add_argument(
        "--processes",
        type=at_least_one,
        default=None,
        help="worker processes on a host (default: this machine's cores, as the local cluster)",
    )
    p.add_argument(
        "--host-memory",
        type=positive,
        default=None,
        metavar="GIB",
        help="memory of each host, which decides each pair's method (default: this machine's RAM)",
    )
    _status_parser(sub)


def _status_parser(sub: Subcommands) -> None:
    p = sub.add_parser("status", help="the layer grid and totals of a tablebase, finished or in progress")
    p.add_argument("url", metavar="URL", help="tablebase: folder or fsspec URL (file://, s3://, memory://)")
    storage_options_arg(p)
    p.add_argument("--json", action="store_true", help="print the status as one JSON object")


def cmd_plan(args: argparse.Namespace) -> int:
    import os

    import psutil

    from ..game.dag import make_plan
    from ..game.variant import Variant
    from ..run.driver import DEFAULT_CHUNK_SIZE
    from ..run.memory import describe

    cores = os.cpu_count() or 1
    plan = make_plan(Variant(args.stones, args.pits), args.min_captured)
    ram = int(args.host_memory * 2**30) if args.host_memory else int(psutil.virtual_memory().total)
    print(
        describe(
            plan, args.chunk_size or DEFAULT_CHUNK_SIZE, args.threads or cores, args.processes or cores, ram
        )
    )
    return 0


def solve_plan(args: argparse.Namespace, variant: Variant, config: dict[str, Any] | None = None) -> Plan:
    """The pairs to solve: the plan of --min-captured (else the config's min-captured,
    else the whole game), or the one pair of --pair."""
    from ..cluster.config import path_of
    from ..game.dag import make_plan, single_pair_plan

    if args.synthetic_deps is not None and args.pair is None:
        raise UsageError("--synthetic-deps needs --pair A B: it makes the dependency layers of one pair.")
    if args.pair is None:
        if args.min_captured is not None:
            return make_plan(variant, args.min_captured)
        if config and config.get("min_captured") is not None:
            return make_plan(variant, config["min_captured"], f"min-captured in the config {path_of(config)}")
        return make_plan(variant, 0)
    if args.min_captured:
        raise UsageError("--pair and --min-captured choose the work two ways: give one of them.")
    for k in args.pair:
        if k not in variant.kazans:
            raise UsageError(
                f"--pair {args.pair[0]} {args.pair[1]}: {k} is not a kazan of the "
                f"{variant.stones}-stone game (even, 0..{variant.win_kazan - 2})."
            )
    return single_pair_plan(variant, *args.pair)


def check_output_folder(url: str) -> None:
    """A local --out must be a folder or not exist yet (nor lie under a file)."""
    from pathlib import Path

    from ..data.store import Store

    store = Store(url)
    if not store.local:
        return
    path = Path(store.root or ".")
    for at in (path, *path.parents):
        if at.exists():
            if not at.is_dir():
                what = "is a file" if at == path else f"lies under the file {at}"
                raise UsageError(
                    f"--out {url} {what}, not a folder: give a folder (it is created when "
                    "missing) or an fsspec URL."
                )
            return


def cmd_solve(args: argparse.Namespace) -> int:
    from ..data.store import redact
    from ..game.variant import Variant
    from ..naming import counted
    from ..run.driver import DEFAULT_CHUNK_SIZE, solve
    from ..run.tasks import Job
    from ..watch.progress import ProgressView, Tee

    # Every argument is checked here, before a cluster starts or anything is written.
    config, args.out, storage_options = config_and_output(args, args.out)
    variant = Variant(args.stones, args.pits)
    plan = solve_plan(args, variant, config)
    check_output_folder(args.out)
    job = Job(
        url=args.out,
        variant=variant,
        storage_options=storage_options,
        method=args.method,
        dtz=args.dtz,
        synthetic=args.synthetic_deps,
    )

    view = ProgressView(sys.stderr, quiet=args.quiet)  # a bar on a terminal, else lines
    log = view.log

    log(
        f"solving {counted(len(plan.layers), 'layer')} ({plan.positions:,} positions) of the "
        f"{variant.describe()} game into {redact(args.out)}"
    )
    dashboard = None if args.dashboard_address.lower() == "none" else args.dashboard_address
    with dask_client(
        args, config, args.out, log=log, dashboard_address=dashboard, barrier_slot=True
    ) as client:
        progress = Tee(view, dashboard_page(client, log, dashboard))
        try:
            summary = solve(
                client,
                job,
                plan,
                log,
                chunk_size=args.chunk_size or DEFAULT_CHUNK_SIZE,
                restart=args.restart,
                progress=progress,
                stop_after_rounds=args.stop_after_rounds,
            )
        except OSError as exc:  # Dask's comm errors are OSErrors
            if client.status == "running":
                raise
            raise BestemsheError(
                f"the solve lost its Dask scheduler ({first_line(exc)}); every finished round is "
                f"checkpointed in {redact(args.out)}: start a scheduler and workers, then run the "
                "same command again to resume."
            ) from None
        finally:
            view.close()
    rate = summary.positions / summary.seconds if summary.seconds else 0.0
    log(
        f"done: {counted(summary.layers_solved, 'layer')} solved, {summary.layers_skipped} skipped, "
        f"{summary.positions:,} positions in {summary.seconds:.1f}s ({rate:,.0f} positions/s)"
    )
    if summary.worker_peak_rss:
        peaks = ", ".join(f"{v / 2**20:,.0f}" for v in sorted(summary.worker_peak_rss.values()))
        log(f"peak RSS per worker (MiB): {peaks} (shared host arrays count in each worker that maps them)")
    if summary.host_memory_peak:
        log(
            f"host memory held at most: {summary.host_memory_peak:,} bytes "
            f"({summary.host_memory_peak / 2**30:.2f} GiB) of shared arrays on one host"
        )
    return 0


def dashboard_page(client: Any, log: Callable[[str], None], dashboard_address: str | None) -> Any:
    """Put the solve's page on the scheduler's dashboard and say where it is; returns
    the listener that feeds it (None when the scheduler has no dashboard)."""
    from distributed import LocalCluster

    from ..watch.dashboard import page_link, register
    from ..watch.progress import SchedulerEvents

    local = isinstance(getattr(client, "cluster", None), LocalCluster)
    if local and dashboard_address is None:
        return None  # no dashboard: nobody to tell
    host = dashboard_address.rsplit(":", 1)[0] if local and dashboard_address else ""
    link = page_link(client, host if host not in ("", "0.0.0.0", "::", "[::]") else None)
    problem = register(client)
    if problem:
        log(problem)
    elif link:
        log(f"dashboard: {link}")
    return SchedulerEvents(client)


@contextlib.contextmanager
def fsspec_without_zstandard() -> Iterator[None]:
    """fsspec imports zstandard as it loads, only to offer a codec this project
    never asks it for (it moves whole objects). `status` decodes no block, so it
    loads fsspec with that one import refused: the command loads neither numba
    nor zstandard, and a later `import zstandard` in the process still works."""
    if "fsspec" in sys.modules or "zstandard" in sys.modules:
        yield
        return
    # `import zstandard` raises ImportError, which fsspec expects (the import system's
    # convention for None in sys.modules, which typeshed's dict of modules does not spell)
    sys.modules["zstandard"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("zstandard", False) is None:
            del sys.modules["zstandard"]


def cmd_status(args: argparse.Namespace) -> int:
    with fsspec_without_zstandard():
        from ..watch.status import format_status, tablebase_status

    status = tablebase_status(args.url, parse_storage_options(args.storage_options))
    print(json.dumps(status) if args.json else format_status(status))
    return 0


COMMANDS = {"solve": cmd_solve, "plan": cmd_plan, "status": cmd_status}
