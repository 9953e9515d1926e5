"""What one position evaluation costs at least, and what that implies for a solve.

    python benchmarks/floor_bench.py --layer 8 12 [--evaluations 2.03] [--publish-core-seconds 64] [--json]

On one layer, over every rank, on one core, kernels compiled before timing:

1. walk:       the odometer alone (rules.successor), the loop every sweep runs;
2. arithmetic: the walk plus each pit's landing() and child_rank() — the
               rule and rank arithmetic of one evaluation, no memory read;
3. sweep:      kernels.sweep_range over the whole layer with every position
               undecided and all-UNKNOWN partner and capture-target arrays (so
               every child is read: one full evaluation per position, the
               prefetching pipeline included).

Then the floors they give: for E evaluations per position (pair 8-12 takes
2.03 with today's rounds; --evaluations), rounds cannot cost less than E times
the arithmetic (nor, with the children's reads, E times the sweep) per
position; --publish-core-seconds adds publication's level-19 compression
(fixed by the published files' bytes). The checksum of the arithmetic loop
(the sum of every child rank) equals one made with rules.move_rank, so the
loop does the kernel's work and not less.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from numba import literally, njit

from bestemshe_dist.game.geometry import capture_targets
from bestemshe_dist.game.rules import MOVE_EMPTY, MOVE_WIN, child_rank, landing, successor, unrank
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.solve import code_arrays, kernels
from bestemshe_dist.solve.pair import dep_bundle


@njit(cache=True, nogil=True)
def walk(pits, stones, lo, hi, binom):
    literally(pits)
    board = np.empty(2 * pits, np.int64)
    unrank(lo, stones, binom, board)
    total = 0
    for x in range(lo, hi):
        total += board[0]
        if x + 1 < hi:
            successor(board)
    return total


@njit(cache=True, nogil=True)
def arithmetic(pits, win_kazan, k1, stones, lo, hi, binom):
    """The sweep's per-move work (kernels._queue_children) without the prefetch and
    the read: returns the sum of every continuing move's child rank."""
    literally(pits)
    n = 2 * pits
    board = np.empty(n, np.int64)
    unrank(lo, stones, binom, board)
    total = 0
    for x in range(lo, hi):
        opponent = 0
        for j in range(pits, n):
            opponent += board[j]
        for pit in range(pits):
            outcome, captured, laps, rest, keep, last = landing(board, opponent, pit, pits, k1, win_kazan)
            if outcome == MOVE_EMPTY or outcome == MOVE_WIN:
                continue
            total += child_rank(board, pit, pits, binom, captured, laps, rest, keep, last)
        if x + 1 < hi:
            successor(board)
    return total


def reference_checksum(variant: Variant, k1: int, k2: int, limit: int) -> int:
    """The same sum over the first `limit` ranks, one move at a time with rules.move_rank."""
    from bestemshe_dist.game.rules import MOVE_ON, move_rank

    stones = variant.board_stones(k1, k2)
    board = np.empty(variant.board, np.int64)
    total = 0
    for x in range(min(limit, variant.layer_size(k1, k2))):
        unrank(x, stones, variant.binom, board)
        opponent = int(board[variant.pits :].sum())
        for pit in range(variant.pits):
            outcome, _, child = move_rank(
                board, opponent, pit, variant.pits, k1, variant.win_kazan, variant.binom
            )
            if outcome == MOVE_ON:
                total += int(child)
    return total


def timed(kernel, args, hi_at):
    """Time kernel(*args) once, after a call on the first ranks only (args[hi_at] is hi)
    has compiled it."""
    warm = list(args)
    warm[hi_at] = min(args[hi_at], 1000)
    kernels.call_specialized(kernel, tuple(warm))
    start = time.perf_counter()
    result = kernels.call_specialized(kernel, args)
    return time.perf_counter() - start, result


def measure(variant: Variant, k1: int, k2: int) -> dict:
    stones = variant.board_stones(k1, k2)
    size = variant.layer_size(k1, k2)
    v = variant
    walk_s, _ = timed(walk, (v.pits, stones, 0, size, v.binom), 3)
    arith_s, checksum = timed(arithmetic, (v.pits, v.win_kazan, k1, stones, 0, size, v.binom), 5)
    targets = {t: code_arrays.new_codes(v.layer_size(*t)) for t in capture_targets(v, k1, k2)}
    deps, start = dep_bundle(v, k1, k2, targets)
    own = code_arrays.new_codes(size)
    other = code_arrays.new_codes(v.layer_size(k2, k1))
    out = code_arrays.new_codes(size)
    sweep_s, (_, _, evaluated) = timed(
        kernels.sweep_range,
        (v.pits, v.win_kazan, k1, stones, 0, size, own, other, deps, start, v.binom, out, 0, False),
        5,
    )
    return {
        "layer": f"{k1}_{k2}",
        "positions": size,
        "evaluated": int(evaluated),
        "checksum": int(checksum),
        "walk_ns": 1e9 * walk_s / size,
        "arithmetic_ns": 1e9 * arith_s / size,
        "sweep_ns": 1e9 * sweep_s / size,
        "seconds": {"walk": walk_s, "arithmetic": arith_s, "sweep": sweep_s},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stones", type=int, default=50)
    parser.add_argument("--pits", type=int, default=5)
    parser.add_argument("--layer", type=int, nargs=2, default=(8, 12), metavar=("K1", "K2"))
    parser.add_argument(
        "--evaluations",
        type=float,
        default=2.03,
        help="evaluations per position of a pair's rounds (pair 8-12: 2.03)",
    )
    parser.add_argument(
        "--publish-core-seconds",
        type=float,
        default=0.0,
        help="core-seconds of publication to add (pair 8-12 through the CLI: about 64)",
    )
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--check",
        type=int,
        default=0,
        metavar="N",
        help="also check the arithmetic checksum on the first N ranks against rules.move_rank",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    variant = Variant(args.stones, args.pits)
    variant.check_layer(*args.layer)
    report = measure(variant, *args.layer)
    if args.check:
        limit = min(args.check, report["positions"])
        part = kernels.call_specialized(
            arithmetic,
            (
                variant.pits,
                variant.win_kazan,
                args.layer[0],
                variant.board_stones(*args.layer),
                0,
                limit,
                variant.binom,
            ),
        )
        report["check"] = {
            "ranks": limit,
            "kernel": int(part),
            "reference": reference_checksum(variant, *args.layer, limit),
        }
    # Floors for a pair of two such layers (both layers the size of this one).
    pair_positions = report["positions"] + variant.layer_size(*reversed(args.layer))
    arith_floor = args.evaluations * pair_positions * report["arithmetic_ns"] * 1e-9
    sweep_floor = args.evaluations * pair_positions * report["sweep_ns"] * 1e-9
    report["floor"] = {
        "evaluations_per_position": args.evaluations,
        "pair_positions": pair_positions,
        "cores": args.cores,
        "arithmetic_core_seconds": arith_floor,
        "evaluations_core_seconds": sweep_floor,
        "publish_core_seconds": args.publish_core_seconds,
        "wall_seconds_arithmetic_only": (arith_floor + args.publish_core_seconds) / args.cores,
        "wall_seconds_with_reads": (sweep_floor + args.publish_core_seconds) / args.cores,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        f = report["floor"]
        print(f"layer {report['layer']}: {report['positions']:,} positions, one core")
        print(
            f"  walk {report['walk_ns']:.1f} ns, arithmetic of every move {report['arithmetic_ns']:.1f} ns, "
            f"full evaluation (sweep) {report['sweep_ns']:.1f} ns per position"
        )
        print(
            f"  pair of {pair_positions:,} positions at {args.evaluations} evaluations each: arithmetic alone "
            f"{f['arithmetic_core_seconds']:.1f} core-s, with the reads {f['evaluations_core_seconds']:.1f} "
            f"core-s; + publication {args.publish_core_seconds:.1f} core-s -> at least "
            f"{f['wall_seconds_arithmetic_only']:.1f} s (arithmetic only) / {f['wall_seconds_with_reads']:.1f} s "
            f"(with reads) on {args.cores} cores"
        )
        if "check" in report:
            c = report["check"]
            print(f"  checksum over {c['ranks']:,} ranks: kernel {c['kernel']}, move_rank {c['reference']}")
    if "check" in report and report["check"]["kernel"] != report["check"]["reference"]:
        print("floor_bench: the arithmetic loop's child ranks differ from rules.move_rank.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
