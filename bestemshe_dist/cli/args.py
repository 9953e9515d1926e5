"""What the commands' arguments share: argparse types that check a value as it
is parsed, the option groups several commands take, and the steps every command
makes from its arguments (storage options, the config, a Dask client)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeAlias

from ..errors import UsageError

# What add_subparsers returns: each command module adds its parsers to it.
Subcommands: TypeAlias = "argparse._SubParsersAction[Parser]"


class Parser(argparse.ArgumentParser):
    commands: dict[str, argparse.ArgumentParser]  # the subcommands' parsers, by name (entry.parse)

    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse prints usage + message)
        self.exit(2, f"{self.prog}: error: {message}\n")


def at_least(minimum: int) -> Callable[[str], int]:
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


at_least_one = at_least(1)


at_least_zero = at_least(0)


def positive(text: str) -> float:
    """An argparse type: a finite number above zero (sizes in MiB, seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, not {text}")
    return value


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0..65535 (0: a free one)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is from 0 to 65535, not {value}")
    return value


def host_port(text: str) -> str:
    if text.lower() == "none":
        return text
    _host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (or none)")
    return text


def variant_args(p: argparse.ArgumentParser, min_captured_default: int | None = 0) -> None:
    p.add_argument("--stones", type=int, default=50, help="stones in the game (even; default 50)")
    p.add_argument("--pits", type=int, default=5, help="pits per side (1..5; default 5)")
    p.add_argument(
        "--min-captured",
        type=at_least_zero,
        default=min_captured_default,
        metavar="M",
        help="only the layers with k1 + k2 >= M, an even number (the endgame part; "
        + (
            "default: the config's min-captured, else 0: the whole game)"
            if min_captured_default is None
            else "default 0)"
        ),
    )


def cluster_args(p: argparse.ArgumentParser) -> None:
    """Where the Dask workers come from (solve, verify, stats): one set of options."""
    p.add_argument(
        "--workers",
        type=at_least_one,
        default=None,
        help="local cluster workers (default 1, with a thread per core); SLURM: worker jobs; Kubernetes: workers",
    )
    p.add_argument(
        "--threads-per-worker",
        type=at_least_one,
        default=None,
        help="local cluster (default: a thread per core for the one default worker, else 1)",
    )
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


def storage_options_arg(p: argparse.ArgumentParser, what: str = "URL") -> None:
    """--storage-options: the fsspec options of the store that `what` names."""
    p.add_argument(
        "--storage-options",
        default=None,
        metavar="JSON",
        help=f"fsspec storage options for {what}, as a JSON object",
    )


def tablebase_parser(
    sub: Subcommands, name: str, help_text: str, position: bool = False
) -> argparse.ArgumentParser:
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
    storage_options_arg(p)
    return p


def parse_storage_options(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise UsageError("--storage-options is not valid JSON.") from None
    if not isinstance(value, dict):
        raise UsageError("--storage-options must be a JSON object.")
    return value


def config_and_output(
    args: argparse.Namespace, url: str | None, what: str = "--out URL"
) -> tuple[dict[str, Any] | None, str, dict[str, Any]]:
    """(config, URL, storage options): --out / --storage-options win over the config's
    storage section (the options are merged key by key, the command line's first)."""
    from ..cluster import load_config, merge_options, storage_from_config

    config = load_config(args.config) if args.config else None
    config_url, config_options = storage_from_config(config)
    url = url or config_url
    if not url:
        raise UsageError(f"give {what} (or a storage url in the --config file).")
    return config, url, merge_options(config_options, parse_storage_options(args.storage_options))


def dask_client(args: argparse.Namespace, config: dict[str, Any] | None, *urls: str, **options: Any) -> Any:
    """The Dask client of a command that reads (and writes) the stores at `urls`
    (stats, verify, sample, match): local workers, a scheduler, SLURM or Kubernetes
    as --workers/--scheduler/--cluster/--config say; the libraries' log records go
    to a file first. A memory:// store keeps the local workers in this process.
    `options` go to connect (dashboard_address)."""
    from ..cluster import connect

    library_logs(args)
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


def library_logs(args: argparse.Namespace) -> None:
    """Once the arguments are checked and a cluster is about to start: the libraries'
    log records go to a file (logs.py), named in the error line if a failure follows."""
    from ..watch.logs import route_library_logs

    args.log_file = route_library_logs(args.command)


def see_log(log_file: Path | None) -> str:
    """Where the libraries' messages went, when they wrote any."""
    if log_file is not None and log_file.exists() and log_file.stat().st_size:
        return f" (library messages: {log_file})"
    return ""


def shown_command(argv: list[str]) -> str:
    """The command line for a card: storage options (credentials) and URL passwords left out."""
    from ..data.store import redact

    out, hide = ["bestemshe-dist"], False
    for word in argv:
        out.append("<storage options>" if hide else redact(word))
        hide = word in ("--storage-options", "--out-storage-options")
    return " ".join(out)
