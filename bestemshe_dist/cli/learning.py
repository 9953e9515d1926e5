"""The commands that learn from the oracle: sample (training data) and match
(a policy against the perfect player)."""

from __future__ import annotations

import argparse
import json
import sys

from .args import (
    Subcommands,
    at_least_one,
    at_least_zero,
    cluster_args,
    config_and_output,
    dask_client,
    parse_storage_options,
    shown_command,
    tablebase_parser,
)


def add_parsers(sub: Subcommands) -> None:
    """sample and match."""
    p = tablebase_parser(sub, "sample", "labelled positions as Parquet shards (training data), made on Dask")
    p.add_argument(
        "--out", required=True, metavar="URL", help="folder or fsspec URL for the shards and the card"
    )
    p.add_argument(
        "--out-storage-options",
        default=None,
        metavar="JSON",
        help="fsspec storage options for --out, as a JSON object (default: --storage-options)",
    )
    p.add_argument("--positions", type=at_least_one, required=True, metavar="N", help="positions in all")
    p.add_argument("--seed", type=at_least_zero, default=0, help="the draw's seed (default 0)")
    p.add_argument(
        "--shard-positions",
        type=at_least_one,
        default=1_000_000,
        metavar="K",
        help="positions a shard (default 1,000,000)",
    )
    p.add_argument(
        "--min-captured",
        type=at_least_zero,
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
    cluster_args(p)

    p = tablebase_parser(sub, "match", "a policy against the perfect player from symmetric starts, on Dask")
    p.add_argument(
        "--policy",
        required=True,
        metavar="SPEC",
        help="random, greedy, minimax:D, oracle, or module:function (a batch of positions in, pits out)",
    )
    p.add_argument(
        "--starts",
        type=at_least_one,
        required=True,
        metavar="N",
        help="symmetric starts, each played twice with colours swapped",
    )
    p.add_argument("--plies", type=at_least_one, default=400, help="a game's length limit, then a draw (400)")
    p.add_argument("--seed", type=at_least_zero, default=0, help="starts and random choices (default 0)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    cluster_args(p)


def cmd_sample(args: argparse.Namespace) -> int:
    from ..learn.sample import plan_sample, sample
    from ..oracle.tablebase import Tablebase

    config, url, options = config_and_output(args, args.url, "the tablebase URL")
    out_options = (
        options if args.out_storage_options is None else parse_storage_options(args.out_storage_options)
    )
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
    with dask_client(args, config, url, args.out, dashboard_address=None) as client:
        sample(
            client,
            url,
            options,
            args.out,
            out_options,
            spec,
            command=shown_command(sys.argv[1:]),
            log=lambda line: print(line, flush=True),
        )
    return 0


def cmd_match(args: argparse.Namespace) -> int:
    from ..learn.match import format_match, load_policy, match
    from ..oracle.tablebase import Tablebase

    config, url, options = config_and_output(args, args.url, "the tablebase URL")
    tb = Tablebase.open(url, options)
    load_policy(args.policy)  # a bad policy is one sentence before a cluster starts
    with dask_client(args, config, url, dashboard_address=None) as client:
        report = match(
            client, tb, url, options, args.policy, starts=args.starts, plies=args.plies, seed=args.seed
        )
    print(json.dumps(report) if args.json else format_match(report))
    return 0


COMMANDS = {"sample": cmd_sample, "match": cmd_match}
