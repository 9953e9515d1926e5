"""The entry point: the parser of every command, and main(), which runs one and
turns its errors into one line (exit 2 for usage, 1 for failures)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType
from typing import NoReturn

from ..errors import BestemsheError, Terminated, UsageError
from . import checking, learning, probing, publishing, solving
from .args import Parser, see_log

COMMANDS = {
    **solving.COMMANDS,
    **probing.COMMANDS,
    **checking.COMMANDS,
    **learning.COMMANDS,
    **publishing.COMMANDS,
}


def build_parser() -> Parser:
    from .. import __version__

    parser = Parser(
        prog="bestemshe-dist",
        description="Distributed retrograde solver for Bestemshe: "
        "solve the game into a tablebase, then probe, play and verify it.",
    )
    parser.add_argument("--version", action="version", version=f"bestemshe-dist {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=Parser, metavar="COMMAND", title="commands"
    )

    solving.add_parsers(sub)
    probing.add_parsers(sub)
    checking.add_parsers(sub)
    learning.add_parsers(sub)
    publishing.add_parsers(sub)
    parser.commands = dict(sub.choices)
    return parser


def parse(argv: list[str] | None = None) -> argparse.Namespace:
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


def _terminate(signum: int, frame: FrameType | None) -> NoReturn:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"bestemshe-dist {args.command}: {exc}", file=sys.stderr)
        return 2
    except BestemsheError as exc:
        print(
            f"bestemshe-dist {args.command}: {exc}{see_log(getattr(args, 'log_file', None))}", file=sys.stderr
        )
        return 1
    except KeyboardInterrupt as exc:
        what = "terminated" if isinstance(exc, Terminated) else "interrupted"
        print(
            f"bestemshe-dist {args.command}: {what}; run the same command again to resume"
            if args.command == "solve"
            else f"bestemshe-dist {args.command}: {what}.",
            file=sys.stderr,
        )
        return 143 if isinstance(exc, Terminated) else 130
    except BrokenPipeError:
        # The reader went away (`... | head`): stop quietly, as other tools do.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
