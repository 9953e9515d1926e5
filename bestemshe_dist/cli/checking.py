"""The commands that check a tablebase: verify (every position against its
children) and checksums (the files against their checksum files)."""

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
    storage_options_arg,
)


def add_parsers(sub: Subcommands) -> None:
    """verify and checksums."""
    _verify_parser(sub)
    _checksums_parser(sub)


def _verify_parser(sub: Subcommands) -> None:
    p = sub.add_parser("verify", help="check every position of a tablebase against its children")
    p.add_argument(
        "url",
        metavar="URL",
        nargs="?",
        default=None,
        help="tablebase: folder or fsspec URL (file://, s3://, memory://); default: storage url of --config",
    )
    storage_options_arg(p)
    p.add_argument(
        "--min-captured",
        type=at_least_zero,
        default=0,
        metavar="M",
        help="only the layers with k1 + k2 >= M",
    )
    p.add_argument(
        "--sample",
        type=at_least_one,
        default=None,
        metavar="N",
        help="check N random positions per layer, reading only the blocks they need "
        "(a quick look at a huge tablebase, not a proof)",
    )
    p.add_argument(
        "--seed",
        type=at_least_zero,
        default=None,
        help="random seed for --sample (default: a new one, shown)",
    )
    p.add_argument(
        "--wdl-only",
        action="store_true",
        help="ignore distance tables: check win/draw/loss only (consistency, not proof)",
    )
    p.add_argument(
        "--chunk-size",
        type=at_least_one,
        default=None,
        metavar="POSITIONS",
        help="positions per check task (default 8,388,608)",
    )
    cluster_args(p)
    p.add_argument(
        "--stones",
        type=int,
        default=None,
        help="the variant of a folder without a manifest (default 50; else read from the manifest)",
    )
    p.add_argument("--pits", type=int, default=None, help="pits per side, as --stones (default 5)")
    p.add_argument(
        "--fresh",
        action="store_true",
        help="check every layer again, ignoring the records of layers that passed in earlier "
        "runs on the same files (kept in the tablebase's .bestemshe/verified/)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON (the lines go to stderr)")
    p.add_argument("--quiet", action="store_true", help="no line per layer: failures and the summary only")


def cmd_verify(args: argparse.Namespace) -> int:
    from ..verify.driver import (
        DEFAULT_CHUNK_SIZE,
        check_options,
        discover_tablebase,
        failure_lines,
        new_seed,
        verify,
    )

    out = sys.stderr if args.json else sys.stdout

    def log(line: str) -> None:
        if not args.quiet:
            print(line, file=out, flush=True)

    config, args.url, options = config_and_output(args, args.url, "the tablebase URL")
    found = discover_tablebase(args.url, options, (args.stones, args.pits))  # fail before the cluster starts
    chunk_size = DEFAULT_CHUNK_SIZE if args.chunk_size is None else args.chunk_size
    check_options(found.variant, args.min_captured, args.sample, chunk_size)
    seed = args.seed if args.seed is not None else new_seed()
    with dask_client(args, config, args.url) as client:
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
            fresh=args.fresh,
        )
    lines = failure_lines(report)
    if lines:
        print("failures:", file=out)
        print("\n".join(lines), file=out)
    print(report["summary"], file=out, flush=True)
    if args.json:
        print(json.dumps(report))
    return 0 if report["passed"] else 1


def _checksums_parser(sub: Subcommands) -> None:
    p = sub.add_parser(
        "checksums",
        help="write the checksum files of a tablebase that has none "
        "(from a copy you trust), or check the ones it has",
    )
    p.add_argument("url", metavar="URL", help="tablebase: folder or fsspec URL (file://, s3://, memory://)")
    storage_options_arg(p)
    p.add_argument(
        "--rewrite",
        action="store_true",
        help="replace checksum files that do not match the layer files (after the files changed)",
    )
    p.add_argument(
        "--threads",
        type=at_least_one,
        default=None,
        help="files read and hashed at once (default: CPU count)",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")


def cmd_checksums(args: argparse.Namespace) -> int:
    from ..data.sidecars import format_checksums_report, write_checksums

    report = write_checksums(
        args.url,
        parse_storage_options(args.storage_options),
        rewrite=args.rewrite,
        threads=args.threads,
        log=None if args.json else print,
    )
    if args.json:
        print(json.dumps(report))
    else:
        print(format_checksums_report(report))
    return 0 if report["passed"] else 1


COMMANDS = {"verify": cmd_verify, "checksums": cmd_checksums}
