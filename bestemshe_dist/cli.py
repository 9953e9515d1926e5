"""`bestemshe-dist`: one command with subcommands. Errors are one line:
exit 2 for usage, 1 for failures."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading

from .errors import BestemsheError, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints usage + message)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _at_least(minimum: int):
    """An argparse type: a whole number >= minimum (worker counts, chunk sizes,
    samples), checked while the arguments are parsed, so a bad one stops
    everything before it starts."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return parse


_at_least_one = _at_least(1)
_at_least_zero = _at_least(0)


def _positive(text: str) -> float:
    """An argparse type: a number above zero (sizes in MiB)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
    return value


def _dashboard_address(text: str) -> str:
    if text.lower() == "none":
        return text
    _host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (or none)")
    return text


def _variant_args(p):
    p.add_argument("--stones", type=int, default=50, help="stones in the game (even; default 50)")
    p.add_argument("--pits", type=int, default=5, help="pits per side (1..5; default 5)")
    p.add_argument(
        "--min-captured",
        type=_at_least_zero,
        default=0,
        metavar="M",
        help="only the layers with k1 + k2 >= M (the endgame part)",
    )


def _cluster_args(p):
    """Where the Dask workers come from (solve, verify, stats): one set of options."""
    p.add_argument(
        "--workers",
        type=_at_least_one,
        default=None,
        help="local cluster workers (default: CPU count); SLURM: worker jobs; Kubernetes: workers",
    )
    p.add_argument("--threads-per-worker", type=_at_least_one, default=None, help="local cluster (default 1)")
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="use a running Dask scheduler instead of a local cluster",
    )
    p.add_argument(
        "--cluster",
        choices=("local", "slurm", "kubernetes"),
        default=None,
        help="where the Dask workers run (default: the config's cluster, else local)",
    )
    p.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="cluster and storage settings, YAML (examples in configs/); options given here win",
    )


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog="bestemshe-dist",
        description="Distributed retrograde solver for Bestemshe: "
        "solve the game into a tablebase, then probe, play and verify it.",
    )
    parser.add_argument("--version", action="version", version=f"bestemshe-dist {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, metavar="COMMAND", title="commands"
    )

    p = sub.add_parser("solve", help="solve layers into a tablebase folder")
    _variant_args(p)
    p.add_argument(
        "--out",
        default=None,
        metavar="URL",
        help="output folder: path or fsspec URL (default: storage url of --config)",
    )
    p.add_argument(
        "--storage-options",
        default=None,
        metavar="JSON",
        help="fsspec storage options for --out, as a JSON object",
    )
    _cluster_args(p)
    p.add_argument(
        "--method",
        choices=("frontier", "sweep"),
        default="frontier",
        help="frontier: re-evaluate only predecessors of new decisions (default); "
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
        type=_at_least_one,
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
        type=_dashboard_address,
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
        type=_at_least_zero,
        default=None,
        metavar="SEED",
        help="with --pair: dependency layers of deterministic pseudo-random values made on the "
        "workers (for runs at full size; the output is marked synthetic and can never join "
        "a real tablebase)",
    )
    p.add_argument(
        "--stop-after-rounds",
        type=_at_least_one,
        default=None,
        metavar="N",
        help="stop each large pair after N rounds, unpublished (for measurements)",
    )

    p = sub.add_parser(
        "plan", help="print the DAG of pairs and layers, and the memory each pair needs per host"
    )
    _variant_args(p)
    p.add_argument(
        "--chunk-size",
        type=_at_least_one,
        default=None,
        metavar="POSITIONS",
        help="as solve's (default 67,108,864)",
    )
    p.add_argument(
        "--threads",
        type=_at_least_one,
        default=None,
        help="tasks running at once on a host (default: this machine's cores)",
    )
    p.add_argument(
        "--processes",
        type=_at_least_one,
        default=None,
        help="worker processes on a host (default: this machine's cores, as the local cluster)",
    )

    _oracle_parsers(sub)
    _verify_parser(sub)
    _status_parser(sub)
    _checksums_parser(sub)
    _learn_parsers(sub)
    parser.commands = dict(sub.choices)
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
    import os

    from .game.dag import make_plan
    from .game.variant import Variant
    from .run.driver import DEFAULT_CHUNK_SIZE
    from .run.memory import describe

    cores = os.cpu_count() or 1
    plan = make_plan(Variant(args.stones, args.pits), args.min_captured)
    print(
        describe(plan, args.chunk_size or DEFAULT_CHUNK_SIZE, args.threads or cores, args.processes or cores)
    )
    return 0


def _solve_plan(args, variant):
    """The pairs to solve: the plan of --min-captured, or the one pair of --pair."""
    from .game.dag import make_plan, single_pair_plan

    if args.synthetic_deps is not None and args.pair is None:
        raise UsageError("--synthetic-deps needs --pair A B: it makes the dependency layers of one pair.")
    if args.pair is None:
        return make_plan(variant, args.min_captured)
    if args.min_captured:
        raise UsageError("--pair and --min-captured choose the work two ways: give one of them.")
    for k in args.pair:
        if k not in variant.kazans:
            raise UsageError(
                f"--pair {args.pair[0]} {args.pair[1]}: {k} is not a kazan of the "
                f"{variant.stones}-stone game (even, 0..{variant.win_kazan - 2})."
            )
    return single_pair_plan(variant, *args.pair)


def _config_and_output(args, url, what="--out URL"):
    """(config, URL, storage options): --out / --storage-options win over the config's
    storage section (the options are merged key by key, the command line's first)."""
    from .cluster import load_config, merge_options, storage_from_config

    config = load_config(args.config) if args.config else None
    config_url, config_options = storage_from_config(config)
    url = url or config_url
    if not url:
        raise UsageError(f"give {what} (or a storage url in the --config file).")
    return config, url, merge_options(config_options, _storage_options(args.storage_options))


def _check_output_folder(url: str) -> None:
    """A local --out must be a folder or not exist yet (nor lie under a file)."""
    from pathlib import Path

    from .data.store import Store

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


def _cmd_solve(args) -> int:
    from .cluster import connect
    from .data.store import redact
    from .game.variant import Variant
    from .run.driver import DEFAULT_CHUNK_SIZE, solve
    from .run.tasks import Job
    from .watch.progress import ProgressView, Tee

    # Every argument is checked here, before a cluster starts or anything is written.
    config, args.out, storage_options = _config_and_output(args, args.out)
    variant = Variant(args.stones, args.pits)
    plan = _solve_plan(args, variant)
    _check_output_folder(args.out)
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
        f"solving {len(plan.layers)} layers ({plan.positions:,} positions) of the "
        f"{variant.describe()} game into {redact(args.out)}"
    )
    in_process = args.out.startswith("memory://")
    dashboard = None if args.dashboard_address.lower() == "none" else args.dashboard_address
    _library_logs(args)
    with connect(
        args.scheduler,
        args.workers,
        args.threads_per_worker,
        in_process,
        cluster=args.cluster,
        config=config,
        log=log,
        dashboard_address=dashboard,
    ) as client:
        progress = Tee(view, _dashboard_page(client, log, dashboard))
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
        finally:
            view.close()
    rate = summary.positions / summary.seconds if summary.seconds else 0.0
    log(
        f"done: {summary.layers_solved} layers solved, {summary.layers_skipped} skipped, "
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


def _dashboard_page(client, log, dashboard_address):
    """Put the solve's page on the scheduler's dashboard and say where it is; returns
    the listener that feeds it (None when the scheduler has no dashboard)."""
    from distributed import LocalCluster

    from .watch.dashboard import page_link, register
    from .watch.progress import SchedulerEvents

    local = isinstance(getattr(client, "cluster", None), LocalCluster)
    if local and dashboard_address is None:
        return None  # no dashboard: nobody to tell
    host = dashboard_address.rsplit(":", 1)[0] if local else ""
    link = page_link(client, host if host not in ("", "0.0.0.0", "::", "[::]") else None)
    problem = register(client)
    if problem:
        log(problem)
    elif link:
        log(f"dashboard: {link}")
    return SchedulerEvents(client)


def _tablebase_parser(sub, name: str, help_text: str, position: bool = False):
    """A command reading one tablebase: URL (and a position), --storage-options."""
    p = sub.add_parser(name, help=help_text)
    p.add_argument("url", metavar="URL", help="tablebase: folder, s3://bucket/prefix or http(s)://base")
    if position:
        p.add_argument(
            "numbers",
            nargs="*",
            metavar="N",
            help="the position from the side to move: K1 K2 P0 .. P9 (own pits first)",
        )
    p.add_argument(
        "--storage-options",
        default=None,
        metavar="JSON",
        help="fsspec storage options for URL, as a JSON object",
    )
    return p


def _oracle_parsers(sub):
    p = _tablebase_parser(sub, "probe", "value, distance and every move of one position", position=True)
    p.add_argument("--json", action="store_true", help="print JSON: value, dtz, moves, best_move")

    p = _tablebase_parser(
        sub, "mainline", "perfect play from one position to the end of the game", position=True
    )
    p.add_argument(
        "--max-plies", type=_at_least_one, default=400, metavar="N", help="stop after N plies (default 400)"
    )
    p.add_argument("--json", action="store_true", help="print JSON: every ply, and the result")

    p = _tablebase_parser(sub, "stats", "win/draw/loss counts and distances of a tablebase, per layer")
    p.add_argument("--json", action="store_true", help="print JSON: the totals and every layer")
    _cluster_args(p)

    p = _tablebase_parser(sub, "serve", "serve a tablebase over HTTP: a JSON API and a web explorer at /")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=_at_least_zero, default=8000, help="port (default 8000; 0: a free one)")
    p.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="the most one request may take, reads included (default 10)",
    )
    p.add_argument(
        "--cache-mib",
        type=_positive,
        default=None,
        metavar="MIB",
        help="decompressed blocks kept in memory (default: the oracle's, 256 MiB); with the "
        "process's own ~150 MiB, what bounds the server's memory",
    )

    p = _tablebase_parser(sub, "play", "play a game in the terminal against the perfect player")
    p.add_argument(
        "--human",
        choices=("first", "second"),
        default="first",
        help="whether you move first (default) or second",
    )
    p.add_argument(
        "--start",
        default=None,
        metavar="POSITION",
        help='start from "K1 K2 P0 .. P9", written from the side to move (default: equal pits, empty kazans)',
    )


def _cmd_probe(args) -> int:
    from .oracle.report import format_report, report
    from .oracle.tablebase import Tablebase

    tb = Tablebase.open(args.url, _storage_options(args.storage_options))
    data = report(tb, args.numbers)
    print(json.dumps(data) if args.json else format_report(data))
    return 0


def _cmd_mainline(args) -> int:
    from .oracle.report import format_mainline, mainline_report
    from .oracle.tablebase import Tablebase

    tb = Tablebase.open(args.url, _storage_options(args.storage_options))
    data = mainline_report(tb.mainline(args.numbers, max_plies=args.max_plies))
    print(json.dumps(data) if args.json else format_mainline(data))
    return 0


def _cmd_stats(args) -> int:
    """In this process (a layer at a time), or with --workers/--scheduler/--cluster/
    --config as one Dask task a layer, each worker reading its layer's blocks."""
    from .oracle.report import format_stats
    from .oracle.tablebase import Tablebase, layer_stats_task

    on_dask = any(x is not None for x in (args.workers, args.scheduler, args.cluster, args.config))
    config, url, options = _config_and_output(args, args.url, "the tablebase URL")
    tb = Tablebase.open(url, options)
    if not on_dask:
        data = tb.stats()
    else:
        tb.layers()  # a store that cannot be read fails here, before a cluster starts
        with _dask(args, config, url, dashboard_address=None) as client:
            data = tb.stats(
                compute=lambda layers: client.gather(
                    client.map(
                        layer_stats_task, [url] * len(layers), [options] * len(layers), layers, pure=False
                    )
                )
            )
    print(json.dumps(data) if args.json else format_stats(data))
    return 0


def _cmd_serve(args) -> int:
    from .oracle.tablebase import Tablebase
    from .serve.app import serve

    if not args.timeout > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {args.timeout:g}.")
    cache = {} if args.cache_mib is None else {"cache_bytes": int(args.cache_mib * 2**20)}
    tb = Tablebase.open(args.url, _storage_options(args.storage_options), **cache)
    serve(tb, args.host, args.port, timeout=args.timeout, print_line=lambda line: print(line, flush=True))
    return 0


def _cmd_play(args) -> int:
    from .oracle.play import play_game
    from .oracle.tablebase import Tablebase

    tb = Tablebase.open(args.url, _storage_options(args.storage_options))
    start = tb.position(args.start) if args.start is not None else None
    play_game(tb, human_first=args.human == "first", start=start)
    return 0


def _verify_parser(sub):
    p = sub.add_parser("verify", help="check every position of a tablebase against its children")
    p.add_argument(
        "url",
        metavar="URL",
        nargs="?",
        default=None,
        help="tablebase: folder or fsspec URL (file://, s3://, memory://); default: storage url of --config",
    )
    p.add_argument(
        "--storage-options",
        default=None,
        metavar="JSON",
        help="fsspec storage options for URL, as a JSON object",
    )
    p.add_argument(
        "--min-captured",
        type=_at_least_zero,
        default=0,
        metavar="M",
        help="only the layers with k1 + k2 >= M",
    )
    p.add_argument(
        "--sample",
        type=_at_least_one,
        default=None,
        metavar="N",
        help="check N random positions per layer, reading only the blocks they need "
        "(a quick look at a huge tablebase, not a proof)",
    )
    p.add_argument(
        "--seed", type=int, default=None, help="random seed for --sample (default: a new one, shown)"
    )
    p.add_argument(
        "--wdl-only",
        action="store_true",
        help="ignore distance tables: check win/draw/loss only (consistency, not proof)",
    )
    p.add_argument(
        "--chunk-size",
        type=_at_least_one,
        default=None,
        metavar="POSITIONS",
        help="positions per check task (default 8,388,608)",
    )
    _cluster_args(p)
    p.add_argument(
        "--stones",
        type=int,
        default=None,
        help="the variant of a folder without a manifest (default 50; else read from the manifest)",
    )
    p.add_argument("--pits", type=int, default=None, help="pits per side, as --stones (default 5)")
    p.add_argument("--json", action="store_true", help="print the report as JSON (the lines go to stderr)")
    p.add_argument("--quiet", action="store_true", help="no line per layer: failures and the summary only")


def _cmd_verify(args) -> int:
    from .verify.driver import (
        DEFAULT_CHUNK_SIZE,
        check_options,
        discover_tablebase,
        failure_lines,
        new_seed,
        verify,
    )

    out = sys.stderr if args.json else sys.stdout

    def log(line):
        if not args.quiet:
            print(line, file=out, flush=True)

    config, args.url, options = _config_and_output(args, args.url, "the tablebase URL")
    found = discover_tablebase(args.url, options, (args.stones, args.pits))  # fail before the cluster starts
    chunk_size = DEFAULT_CHUNK_SIZE if args.chunk_size is None else args.chunk_size
    check_options(found.variant, args.min_captured, args.sample, chunk_size)
    seed = args.seed if args.seed is not None else new_seed()
    with _dask(args, config, args.url) as client:
        report = verify(
            client,
            args.url,
            options,
            min_captured=args.min_captured,
            sample=args.sample,
            seed=seed,
            chunk_size=chunk_size,
            wdl_only=args.wdl_only,
            discovered=found,
            log=log,
        )
    lines = failure_lines(report)
    if lines:
        print("failures:", file=out)
        print("\n".join(lines), file=out)
    print(report["summary"], file=out, flush=True)
    if args.json:
        print(json.dumps(report))
    return 0 if report["passed"] else 1


def _checksums_parser(sub):
    p = sub.add_parser(
        "checksums",
        help="write the checksum files of a tablebase that has none "
        "(from a copy you trust), or check the ones it has",
    )
    p.add_argument("url", metavar="URL", help="tablebase: folder or fsspec URL (file://, s3://, memory://)")
    p.add_argument(
        "--storage-options",
        default=None,
        metavar="JSON",
        help="fsspec storage options for URL, as a JSON object",
    )
    p.add_argument(
        "--rewrite",
        action="store_true",
        help="replace checksum files that do not match the layer files (after the files changed)",
    )
    p.add_argument(
        "--threads",
        type=_at_least_one,
        default=None,
        help="files read and hashed at once (default: CPU count)",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")


def _cmd_checksums(args) -> int:
    from .data.sidecars import format_checksums_report, write_checksums

    report = write_checksums(
        args.url,
        _storage_options(args.storage_options),
        rewrite=args.rewrite,
        threads=args.threads,
        log=None if args.json else print,
    )
    if args.json:
        print(json.dumps(report))
    else:
        print(format_checksums_report(report))
    return 0 if report["passed"] else 1


def _status_parser(sub):
    p = sub.add_parser("status", help="the layer grid and totals of a tablebase, finished or in progress")
    p.add_argument("url", metavar="URL", help="tablebase: folder or fsspec URL (file://, s3://, memory://)")
    p.add_argument(
        "--storage-options",
        default=None,
        metavar="JSON",
        help="fsspec storage options for URL, as a JSON object",
    )
    p.add_argument("--json", action="store_true", help="print the status as one JSON object")


@contextlib.contextmanager
def _fsspec_without_zstandard():
    """fsspec imports zstandard as it loads, only to offer a codec this project
    never asks it for (it moves whole objects). `status` decodes no block, so it
    loads fsspec with that one import refused: the command loads neither numba
    nor zstandard, and a later `import zstandard` in the process still works."""
    if "fsspec" in sys.modules or "zstandard" in sys.modules:
        yield
        return
    sys.modules["zstandard"] = None  # `import zstandard` raises ImportError, which fsspec expects
    try:
        yield
    finally:
        if sys.modules.get("zstandard", False) is None:
            del sys.modules["zstandard"]


def _cmd_status(args) -> int:
    with _fsspec_without_zstandard():
        from .watch.status import format_status, tablebase_status

    status = tablebase_status(args.url, _storage_options(args.storage_options))
    print(json.dumps(status) if args.json else format_status(status))
    return 0


def parse(argv=None) -> argparse.Namespace:
    """The command and its arguments. Options may come anywhere among a command's
    positional arguments (`probe URL --json K1 K2 ...`); a bare `bestemshe-dist`
    lists the commands."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        parser.print_help()
        parser.exit(0)
    command = parser.commands.get(argv[0])
    if command is None:
        return parser.parse_args(argv)  # --help, --version, or one line naming the bad command
    args = command.parse_intermixed_args(argv[1:])
    args.command = argv[0]
    return args


def _learn_parsers(sub):
    p = _tablebase_parser(sub, "sample", "labelled positions as Parquet shards (training data), made on Dask")
    p.add_argument(
        "--out", required=True, metavar="URL", help="folder or fsspec URL for the shards and the card"
    )
    p.add_argument(
        "--out-storage-options",
        default=None,
        metavar="JSON",
        help="fsspec storage options for --out, as a JSON object (default: --storage-options)",
    )
    p.add_argument("--positions", type=_at_least_one, required=True, metavar="N", help="positions in all")
    p.add_argument("--seed", type=_at_least_zero, default=0, help="the draw's seed (default 0)")
    p.add_argument(
        "--shard-positions",
        type=_at_least_one,
        default=1_000_000,
        metavar="K",
        help="positions a shard (default 1,000,000)",
    )
    p.add_argument(
        "--min-captured",
        type=_at_least_zero,
        default=0,
        metavar="M",
        help="only layers with k1 + k2 >= M (default: every layer the tablebase holds)",
    )
    p.add_argument(
        "--weights",
        choices=("uniform", "layer"),
        default="uniform",
        help="uniform over positions (default), or the same share for every layer",
    )
    p.add_argument(
        "--with-no-move",
        action="store_true",
        help="keep positions whose mover has no stone (lost, no move to label)",
    )
    _cluster_args(p)

    p = _tablebase_parser(sub, "match", "a policy against the perfect player from symmetric starts, on Dask")
    p.add_argument(
        "--policy",
        required=True,
        metavar="SPEC",
        help="random, greedy, minimax:D, oracle, or module:function (a batch of positions in, pits out)",
    )
    p.add_argument(
        "--starts",
        type=_at_least_one,
        required=True,
        metavar="N",
        help="symmetric starts, each played twice with colours swapped",
    )
    p.add_argument(
        "--plies", type=_at_least_one, default=400, help="a game's length limit, then a draw (400)"
    )
    p.add_argument("--seed", type=_at_least_zero, default=0, help="starts and random choices (default 0)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    _cluster_args(p)


def _dask(args, config, *urls, **options):
    """The Dask client of a command that reads (and writes) the stores at `urls`
    (stats, verify, sample, match): local workers, a scheduler, SLURM or Kubernetes
    as --workers/--scheduler/--cluster/--config say; the libraries' log records go
    to a file first. A memory:// store keeps the local workers in this process.
    `options` go to connect (dashboard_address)."""
    from .cluster import connect

    _library_logs(args)
    in_process = any(str(url).startswith("memory://") for url in urls)
    return connect(
        args.scheduler,
        args.workers,
        args.threads_per_worker,
        in_process,
        cluster=args.cluster,
        config=config,
        **options,
    )


def _shown_command(argv) -> str:
    """The command line for a card: storage options (credentials) and URL passwords left out."""
    from .data.store import redact

    out, hide = ["bestemshe-dist"], False
    for word in argv:
        out.append("<storage options>" if hide else redact(word))
        hide = word in ("--storage-options", "--out-storage-options")
    return " ".join(out)


def _cmd_sample(args) -> int:
    from .learn.sample import plan_sample, sample
    from .oracle.tablebase import Tablebase

    config, url, options = _config_and_output(args, args.url, "the tablebase URL")
    out_options = options if args.out_storage_options is None else _storage_options(args.out_storage_options)
    tb = Tablebase.open(url, options)
    spec = plan_sample(
        tb,
        positions=args.positions,
        seed=args.seed,
        shard_positions=args.shard_positions,
        min_captured=args.min_captured,
        weights=args.weights,
        with_no_move=args.with_no_move,
    )
    with _dask(args, config, url, args.out, dashboard_address=None) as client:
        sample(
            client,
            url,
            options,
            args.out,
            out_options,
            spec,
            command=_shown_command(sys.argv[1:]),
            log=lambda line: print(line, flush=True),
        )
    return 0


def _cmd_match(args) -> int:
    from .learn.match import format_match, load_policy, match
    from .oracle.tablebase import Tablebase

    config, url, options = _config_and_output(args, args.url, "the tablebase URL")
    tb = Tablebase.open(url, options)
    load_policy(args.policy)  # a bad policy is one sentence before a cluster starts
    with _dask(args, config, url, dashboard_address=None) as client:
        report = match(
            client, tb, url, options, args.policy, starts=args.starts, plies=args.plies, seed=args.seed
        )
    print(json.dumps(report) if args.json else format_match(report))
    return 0


COMMANDS = {
    "solve": _cmd_solve,
    "plan": _cmd_plan,
    "status": _cmd_status,
    "probe": _cmd_probe,
    "mainline": _cmd_mainline,
    "stats": _cmd_stats,
    "serve": _cmd_serve,
    "play": _cmd_play,
    "verify": _cmd_verify,
    "checksums": _cmd_checksums,
    "sample": _cmd_sample,
    "match": _cmd_match,
}


class _Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, a container's stop, SLURM's scancel or time limit): stop as
    Ctrl-C does, so the run frees its host memory and leaves its checkpoints."""


def _terminate(signum, frame):
    raise _Terminated()


def main(argv=None) -> int:
    args = parse(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"bestemshe-dist {args.command}: {exc}", file=sys.stderr)
        return 2
    except BestemsheError as exc:
        print(f"bestemshe-dist {args.command}: {exc}{_see(getattr(args, 'log_file', None))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        what = "terminated" if isinstance(exc, _Terminated) else "interrupted"
        print(
            f"bestemshe-dist {args.command}: {what}; run the same command again to resume"
            if args.command == "solve"
            else f"bestemshe-dist {args.command}: {what}.",
            file=sys.stderr,
        )
        return 143 if isinstance(exc, _Terminated) else 130
    except BrokenPipeError:
        # The reader went away (`... | head`): stop quietly, as other tools do.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _library_logs(args) -> None:
    """Once the arguments are checked and a cluster is about to start: the libraries'
    log records go to a file (logs.py), named in the error line if a failure follows."""
    from .watch.logs import route_library_logs

    args.log_file = route_library_logs(args.command)


def _see(log_file) -> str:
    """Where the libraries' messages went, when they wrote any."""
    if log_file is not None and log_file.exists() and log_file.stat().st_size:
        return f" (library messages: {log_file})"
    return ""


if __name__ == "__main__":
    sys.exit(main())
