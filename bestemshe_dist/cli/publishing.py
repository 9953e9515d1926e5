"""The command that writes what a solved game says: results."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError
from .args import Subcommands, at_least_one, cluster_args, config_and_output, dask_client, tablebase_parser


def add_parsers(sub: Subcommands) -> None:
    """results."""
    p = tablebase_parser(
        sub,
        "results",
        "write what a solved game says into a folder: its card (README.md, pictures), "
        "facts.json, the manifest and SHA256SUMS",
    )
    p.add_argument(
        "--out", required=True, metavar="FOLDER", help="the results folder (created; its files replaced)"
    )
    p.add_argument(
        "--max-plies",
        type=at_least_one,
        default=2000,
        metavar="N",
        help="stop the perfect game from the start after N plies (default 2000)",
    )
    p.add_argument(
        "--name",
        default=None,
        metavar="TEXT",
        help="how the card's commands name the tablebase folder (default: URL as given)",
    )
    cluster_args(p)


def cmd_results(args: argparse.Namespace) -> int:
    """In this process (a layer at a time), or with --workers/--scheduler/--cluster/
    --config the statistics as one Dask task a layer."""
    from ..data.store import redact
    from ..oracle.tablebase import Tablebase, layer_stats_task
    from ..results.write import write_results

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {args.out} is a file, not a folder.")
    on_dask = any(x is not None for x in (args.workers, args.scheduler, args.cluster, args.config))
    config, url, options = config_and_output(args, args.url, "the tablebase URL")
    Tablebase.open(url, options).layers()  # a store that cannot be read fails here, first
    shown = args.name or redact(url)
    if not on_dask:
        facts = write_results(url, out, options, shown=shown, max_plies=args.max_plies)
    else:
        with dask_client(args, config, url, dashboard_address=None) as client:
            facts = write_results(
                url,
                out,
                options,
                compute=lambda layers: client.gather(
                    client.map(
                        layer_stats_task, [url] * len(layers), [options] * len(layers), layers, pure=False
                    )
                ),
                shown=shown,
                max_plies=args.max_plies,
            )
    start, verify = facts["start"], facts["verify"]
    print(
        f"wrote {out}: the start {start['position']} is a {start['value']}"
        + (f" in {start['dtz']} plies" if start["dtz"] is not None and start["value"] != "draw" else "")
        + f" for the side to move; {facts['counts']['positions']:,} positions; verify "
        + ("passed" if verify["passed"] else "not passed" if verify["ran"] else "not run")
    )
    return 0


COMMANDS = {"results": cmd_results}
