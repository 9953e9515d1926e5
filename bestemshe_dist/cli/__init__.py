"""The command line, `bestemshe-dist`: one command with subcommands, each checked
whole before anything starts. Errors are one line: exit 2 for usage, 1 for failures.

- entry.py: the parser of every command, and main(), which runs one and turns its
  errors into that one line (SIGTERM stops a solve as Ctrl-C does).
- args.py: what the commands' arguments share: argparse types, the option groups
  of a tablebase and of a cluster, storage options, the config, a Dask client.
- solving.py: solve, plan and status.
- probing.py: the oracle's commands: probe, mainline, stats, serve and play.
- checking.py: verify and checksums.
- learning.py: sample and match.
- publishing.py: results (what a solved game says, as a folder).

May import every layer of the package: it is the outermost.
"""

from .entry import build_parser, main, parse

__all__ = ["build_parser", "main", "parse"]
