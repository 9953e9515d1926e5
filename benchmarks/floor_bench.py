"""What a position costs at least to solve by counting, and what that implies for a solve.

    python benchmarks/floor_bench.py --layer 8 12 [--unmoves 3.06] [--publish-core-seconds 75]
        [--solved DIR --solved-publish-core-seconds S] [--check N] [--json]

On one layer, over every rank, on one core, kernels compiled before timing:

1. walk:        the odometer alone (rules.successor), the loop every pass runs;
2. arithmetic:  the walk plus each pit's landing() and child_rank(), every
                continuing move ranked, no memory read (a frontier evaluation's
                arithmetic);
3. sweep:       kernels.sweep_range with every position undecided and
                all-UNKNOWN partner and capture-target arrays, every child read;
4. first round: counting.first_range over the layer, as counting's round 0
                evaluates each position (captures' targets read, quiet moves
                only counted);
5. un-moves:    every position taken as a decided source, its un-moves found
                (unmove_specs) and each predecessor ranked (unmove_rank), no
                read of a predecessor's state: a counting walk's arithmetic.

Then the floor they give by counting: a pair of two such layers at one
evaluation a position (round 0) and U un-moves a position (--unmoves; pair
8-12 walks 3.06), plus --publish-core-seconds of level-19 compression (fixed
by the published files' bytes), on --cores cores; with --solved DIR, the same
for a whole solve from DIR's manifest (its positions, evaluations and
un-moves). No predecessor's state is read in that floor, nor any task
scheduled: the rounds cost more by those reads. --check N compares both
loops, on the first N ranks, with rules.move_rank and with rules.unmoves and
rules.rank, so each loop does its kernel's work and not less.
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
from bestemshe_dist.game.rules import (
    MOVE_EMPTY,
    MOVE_WIN,
    child_rank,
    landing,
    successor,
    unmove_rank,
    unmove_specs,
    unrank,
)
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.solve import code_arrays, counting, kernels
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


@njit(cache=True, nogil=True)
def unmove_arithmetic(pits, stones, lo, hi, binom):
    """A counting round's per-source work (counting.walk_range) without the
    prefetch and the update: every position of [lo, hi) taken as a decided
    source, in rank order as a dense round's walk reaches them, its un-moves
    found (unmove_specs) and each predecessor ranked (unmove_rank). Returns (the
    sum of the predecessors' ranks, the un-moves)."""
    literally(pits)
    n = 2 * pits
    child = np.empty(n, np.int64)
    after = np.empty(n, np.int64)
    specs = np.empty((pits * (n + 1), 3), np.int64)
    unrank(lo, stones, binom, child)
    total = 0
    count = 0
    for x in range(lo, hi):
        for p in range(unmove_specs(child, pits, after, specs)):
            total += unmove_rank(after, pits, specs[p, 0], specs[p, 1], specs[p, 2], binom)
            count += 1
        if x + 1 < hi:
            successor(child)
    return total, count


def reference_unmove_checksum(variant: Variant, k1: int, k2: int, limit: int) -> tuple[int, int]:
    """The same over the first `limit` ranks, from rules.unmoves' boards and rules.rank."""
    from bestemshe_dist.game.rules import max_unmoves, rank, unmoves

    stones = variant.board_stones(k1, k2)
    board = np.empty(variant.board, np.int64)
    preds = np.empty((max_unmoves(variant.pits), variant.board), np.int64)
    total = 0
    count = 0
    for x in range(min(limit, variant.layer_size(k1, k2))):
        unrank(x, stones, variant.binom, board)
        for p in range(unmoves(board, variant.pits, preds)):
            total += int(rank(preds[p], variant.binom))
            count += 1
    return total, count


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
    states = counting.new_states(size)
    out = code_arrays.new_codes(size)
    first_s, _ = timed(
        counting.first_range,
        (v.pits, v.win_kazan, k1, stones, 0, size, states, deps, start, v.binom, out, 0),
        5,
    )
    unmove_s, (unmove_sum, unmoves) = timed(unmove_arithmetic, (v.pits, stones, 0, size, v.binom), 3)
    return {
        "layer": f"{k1}_{k2}",
        "positions": size,
        "evaluated": int(evaluated),
        "checksum": int(checksum),
        "unmoves": int(unmoves),
        "unmove_checksum": int(unmove_sum),
        "walk_ns": 1e9 * walk_s / size,
        "arithmetic_ns": 1e9 * arith_s / size,
        "sweep_ns": 1e9 * sweep_s / size,
        "first_round_ns": 1e9 * first_s / size,
        "unmove_ns": 1e9 * unmove_s / max(1, unmoves),
        "seconds": {
            "walk": walk_s,
            "arithmetic": arith_s,
            "sweep": sweep_s,
            "first_round": first_s,
            "unmoves": unmove_s,
        },
    }


def solved_totals(folder: Path) -> dict:
    """Positions, evaluations and un-moves of a folder this project solved, from its
    manifest (a pair's figures stand in each of its layers' entries: counted once)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    pairs = {}
    positions = 0
    for entry in manifest["layers"].values():
        positions += entry["positions"]
        pairs[tuple(sorted((entry["k1"], entry["k2"])))] = entry
    return {
        "folder": str(folder),
        "layers": len(manifest["layers"]),
        "positions": positions,
        "evaluations": sum(e.get("evaluations", 0) for e in pairs.values()),
        "unmoves": sum(e.get("unmoves", 0) for e in pairs.values()),
    }


def floors(
    report: dict, positions: int, evaluations: float, unmoves: float, publish: float, cores: int
) -> dict:
    """What `positions` cost at least by counting, at this layer's costs: each
    evaluation as round 0 makes it (with its reads of the captures' targets), each
    un-move's arithmetic (no read of its predecessor's state), plus `publish`
    core-seconds, on `cores` cores."""
    rounds = (evaluations * report["first_round_ns"] + unmoves * report["unmove_ns"]) * 1e-9
    return {
        "positions": positions,
        "evaluations": evaluations,
        "unmoves": unmoves,
        "cores": cores,
        "rounds_core_seconds": rounds,
        "publish_core_seconds": publish,
        "wall_seconds": (rounds + publish) / cores,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stones", type=int, default=50)
    parser.add_argument("--pits", type=int, default=5)
    parser.add_argument("--layer", type=int, nargs=2, default=(8, 12), metavar=("K1", "K2"))
    parser.add_argument(
        "--evaluations",
        type=float,
        default=1.0,
        help="evaluations per position of a pair (counting: 1, its round 0)",
    )
    parser.add_argument(
        "--unmoves",
        type=float,
        default=3.06,
        help="un-moves walked per position of a pair (pair 8-12 by counting: 3.06)",
    )
    parser.add_argument(
        "--publish-core-seconds",
        type=float,
        default=0.0,
        help="core-seconds of publication to add (pair 8-12: 54-75, by machine)",
    )
    parser.add_argument(
        "--solved",
        type=Path,
        metavar="DIR",
        help="also the floor of a whole solve: DIR's manifest gives its positions, evaluations and un-moves",
    )
    parser.add_argument(
        "--solved-publish-core-seconds",
        type=float,
        default=0.0,
        help="core-seconds of that solve's publication to add",
    )
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--check",
        type=int,
        default=0,
        metavar="N",
        help="also check both loops' checksums on the first N ranks against rules.move_rank and rules.unmoves",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    variant = Variant(args.stones, args.pits)
    variant.check_layer(*args.layer)
    if args.solved is not None and not (args.solved / "manifest.json").is_file():
        print(
            f"floor_bench: {args.solved} holds no manifest.json (a folder this project solved).",
            file=sys.stderr,
        )
        return 2
    report = measure(variant, *args.layer)
    if args.check:
        limit = min(args.check, report["positions"])
        stones = variant.board_stones(*args.layer)
        part = kernels.call_specialized(
            arithmetic,
            (variant.pits, variant.win_kazan, args.layer[0], stones, 0, limit, variant.binom),
        )
        back, count = kernels.call_specialized(
            unmove_arithmetic, (variant.pits, stones, 0, limit, variant.binom)
        )
        ref_back, ref_count = reference_unmove_checksum(variant, *args.layer, limit)
        report["check"] = {
            "ranks": limit,
            "kernel": int(part),
            "reference": reference_checksum(variant, *args.layer, limit),
            "unmove_kernel": [int(back), int(count)],
            "unmove_reference": [ref_back, ref_count],
        }
    # A pair of two such layers (both the size of this one).
    pair_positions = report["positions"] + variant.layer_size(*reversed(args.layer))
    report["floor"] = floors(
        report,
        pair_positions,
        args.evaluations * pair_positions,
        args.unmoves * pair_positions,
        args.publish_core_seconds,
        args.cores,
    )
    if args.solved is not None:
        totals = solved_totals(args.solved)
        report["solved"] = totals
        report["solved_floor"] = floors(
            report,
            totals["positions"],
            totals["evaluations"],
            totals["unmoves"],
            args.solved_publish_core_seconds,
            args.cores,
        )
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"layer {report['layer']}: {report['positions']:,} positions, one core")
        print(
            f"  walk {report['walk_ns']:.1f} ns, arithmetic of every move {report['arithmetic_ns']:.1f} ns, "
            f"full evaluation (sweep) {report['sweep_ns']:.1f} ns, counting's round 0 "
            f"{report['first_round_ns']:.1f} ns per position; "
            f"{report['unmoves'] / report['positions']:.2f} un-moves a position, "
            f"{report['unmove_ns']:.1f} ns each (found and ranked)"
        )
        said = [("pair", report["floor"])]
        if "solved" in report:
            said.append(
                (
                    f"{report['solved']['folder']} ({report['solved']['layers']} layers)",
                    report["solved_floor"],
                )
            )
        for what, f in said:
            print(
                f"  {what}: {f['positions']:,} positions, {f['evaluations']:,.0f} evaluations, "
                f"{f['unmoves']:,.0f} un-moves: rounds at least {f['rounds_core_seconds']:,.1f} core-s; "
                f"+ publication {f['publish_core_seconds']:,.1f} core-s -> at least {f['wall_seconds']:,.1f} s "
                f"on {f['cores']} cores"
            )
        if "check" in report:
            c = report["check"]
            print(f"  checksum over {c['ranks']:,} ranks: kernel {c['kernel']}, move_rank {c['reference']}")
            print(
                f"  un-moves over {c['ranks']:,} ranks (rank sum, count): kernel {c['unmove_kernel']}, "
                f"rules.unmoves {c['unmove_reference']}"
            )
    if "check" in report:
        c = report["check"]
        if c["kernel"] != c["reference"]:
            print(
                "floor_bench: the arithmetic loop's child ranks differ from rules.move_rank.", file=sys.stderr
            )
            return 1
        if c["unmove_kernel"] != c["unmove_reference"]:
            print("floor_bench: the un-move loop's predecessors differ from rules.unmoves.", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
