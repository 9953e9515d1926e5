"""The oracle's commands: probe, mainline, stats, serve and play."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ..errors import UsageError
from .args import (
    Subcommands,
    at_least_one,
    cluster_args,
    config_and_output,
    dask_client,
    parse_storage_options,
    port_number,
    positive,
    tablebase_parser,
)

if TYPE_CHECKING:
    from ..game.position import Position
    from ..oracle.tablebase import Tablebase


def add_parsers(sub: Subcommands) -> None:
    """probe, mainline, stats, serve and play."""
    p = tablebase_parser(sub, "probe", "value, distance and every move of one position", position=True)
    p.add_argument(
        "--json", action="store_true", help="print JSON (docs/json.md): category, dtz, moves, best_move"
    )

    p = tablebase_parser(
        sub, "mainline", "perfect play from one position to the end of the game", position=True
    )
    p.add_argument(
        "--max-plies", type=at_least_one, default=400, metavar="N", help="stop after N plies (default 400)"
    )
    p.add_argument("--json", action="store_true", help="print JSON: every ply, and the result")

    p = tablebase_parser(sub, "stats", "win/draw/loss counts and distances of a tablebase, per layer")
    p.add_argument("--json", action="store_true", help="print JSON: the totals and every layer")
    cluster_args(p)

    p = tablebase_parser(sub, "serve", "serve a tablebase over HTTP: a JSON API and a web explorer at /")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=8000, help="port (default 8000; 0: a free one)")
    p.add_argument(
        "--timeout",
        type=positive,
        default=10.0,
        metavar="SECONDS",
        help="the most one request may take, reads included (default 10)",
    )
    p.add_argument(
        "--cache-mib",
        type=positive,
        default=None,
        metavar="MIB",
        help="decompressed blocks kept in memory (default: the oracle's, 256 MiB); with the "
        "process's own ~150 MiB, what bounds the server's memory",
    )

    p = tablebase_parser(sub, "play", "play a game in the terminal against the perfect player")
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


def cmd_probe(args: argparse.Namespace) -> int:
    from ..oracle.report import format_report, report
    from ..oracle.tablebase import Tablebase

    tb = Tablebase.open(args.url, parse_storage_options(args.storage_options))
    data = report(tb, args.numbers)
    print(json.dumps(data) if args.json else format_report(data))
    return 0


def cmd_mainline(args: argparse.Namespace) -> int:
    from ..oracle.report import format_mainline, mainline_report
    from ..oracle.tablebase import Tablebase

    tb = Tablebase.open(args.url, parse_storage_options(args.storage_options))
    data = mainline_report(tb.mainline(args.numbers, max_plies=args.max_plies))
    print(json.dumps(data) if args.json else format_mainline(data))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    """In this process (a layer at a time), or with --workers/--scheduler/--cluster/
    --config as one Dask task a layer, each worker reading its layer's blocks."""
    from ..oracle.report import format_stats
    from ..oracle.tablebase import Tablebase, layer_stats_task

    on_dask = any(x is not None for x in (args.workers, args.scheduler, args.cluster, args.config))
    config, url, options = config_and_output(args, args.url, "the tablebase URL")
    tb = Tablebase.open(url, options)
    if not on_dask:
        data = tb.stats()
    else:
        tb.layers()  # a store that cannot be read fails here, before a cluster starts
        with dask_client(args, config, url, dashboard_address=None) as client:
            data = tb.stats(
                compute=lambda layers: client.gather(
                    client.map(
                        layer_stats_task, [url] * len(layers), [options] * len(layers), layers, pure=False
                    )
                )
            )
    print(json.dumps(data) if args.json else format_stats(data))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from ..oracle.tablebase import Tablebase
    from ..serve.app import serve

    check_host(args.host)
    cache = {} if args.cache_mib is None else {"cache_bytes": int(args.cache_mib * 2**20)}
    tb = Tablebase.open(args.url, parse_storage_options(args.storage_options), **cache)
    serve(tb, args.host, args.port, timeout=args.timeout, print_line=lambda line: print(line, flush=True))
    return 0


def check_host(host: str) -> None:
    """--host must name an address of this machine's resolver, checked before the
    tablebase is opened (an empty one would listen everywhere and print no address)."""
    import socket

    if not host.strip():
        raise UsageError("--host is empty: give an address to listen on, e.g. 127.0.0.1 or 0.0.0.0.")
    try:
        socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise UsageError(f"--host {host}: not an address to listen on ({reason}).") from None


def cmd_play(args: argparse.Namespace) -> int:
    from ..oracle.play import play_game
    from ..oracle.tablebase import Tablebase

    tb = Tablebase.open(args.url, parse_storage_options(args.storage_options))
    start = tb.position(args.start) if args.start is not None else None
    check_start_held(tb, start)
    play_game(tb, human_first=args.human == "first", start=start)
    return 0


def check_start_held(tb: Tablebase, start: Position | None) -> None:
    """The game's first position must be in a layer the tablebase holds (an endgame
    folder holds no layer_0_0): said before the board is drawn, with a start to try."""
    from ..game.position import Position, random_symmetric
    from ..naming import counted, layer_name

    held = tb.layers()
    if not held:
        return  # a store that cannot be listed: the first read says what is missing
    v = tb.variant
    first = Position.start(v) if start is None else start
    if first.layer in held:
        return
    # The held layer with the most stones on the board, its kazans closest to equal.
    layer = min(held, key=lambda l: (-v.board_stones(*l), abs(l[0] - l[1]), l))
    try:
        import numpy as np

        example = random_symmetric(v, layer, np.random.default_rng(0))
    except UsageError:  # no symmetric position there: the first with a move
        example = next(
            p
            for p in (Position.from_rank(v, layer[0], layer[1], r) for r in range(v.layer_size(*layer)))
            if p.legal_pits()
        )
    what = "the starting layer" if start is None else f"layer {layer_name(*first.layer)} of --start {first}"
    raise UsageError(
        f"{tb.url} does not hold {what}"
        + (f" {layer_name(*first.layer)}" if start is None else "")
        + f" (it holds {counted(len(held), 'layer')}, e.g. {layer_name(*layer)}): pass --start with a "
        f'position of a held layer, e.g. --start "{example}".'
    )


COMMANDS = {
    "probe": cmd_probe,
    "mainline": cmd_mainline,
    "stats": cmd_stats,
    "serve": cmd_serve,
    "play": cmd_play,
}
