"""Solve one pair {(a, b), (b, a)} whole, in memory, given its dependency layers.

Used by the Dask task of a small pair and by tests. The loop is the naive sweep of
the original solver: re-evaluate every undecided position of both layers, in place,
until a sweep decides nothing (least fixpoint; what is left is DRAW).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import kernels
from .variant import Variant

_NO_LAYER = np.zeros(1, dtype=np.uint64)


def pair_layers(a: int, b: int) -> list[tuple[int, int]]:
    return [(a, b)] if a == b else [(a, b), (b, a)]


def capture_targets(variant: Variant, k1: int, k2: int) -> list[tuple[int, int]]:
    """Layers reached from layer (k1, k2) by a capture that does not end the game."""
    stones = variant.board_stones(k1, k2)
    return [(k2, k1 + c) for c in range(2, stones + 1, 2) if k1 + c <= variant.win_kazan - 2]


def dep_tuple(variant: Variant, k1: int, k2: int, layer_codes: dict) -> tuple:
    """The kernels' fixed-length tuple of dependency code arrays for layer (k1, k2)."""
    slots = [_NO_LAYER] * kernels.MAX_DEPS
    for k2_child, k1_child in capture_targets(variant, k1, k2):
        slots[(k1_child - k1) // 2 - 1] = layer_codes[(k2_child, k1_child)]
    return tuple(slots)


@dataclass
class PairResult:
    codes: dict                      # layer -> code array (UNKNOWN now means DRAW)
    sweeps: int = 0
    evaluations: int = 0             # positions evaluated, over all sweeps
    seconds: float = 0.0
    decided_per_sweep: list = field(default_factory=list)


def solve_pair(variant: Variant, a: int, b: int, dep_codes: dict) -> PairResult:
    """dep_codes maps every layer in capture_targets of the pair's layers to codes."""
    start = time.perf_counter()
    layers = pair_layers(a, b)
    size = variant.layer_size(a, b)
    stones = variant.board_stones(a, b)
    codes = {layer: kernels.new_codes(size) for layer in layers}
    deps = {layer: dep_tuple(variant, *layer, dep_codes) for layer in layers}
    result = PairResult(codes=codes)
    undecided = {layer: size for layer in layers}
    while True:
        decided = 0
        for k1, k2 in layers:
            own = codes[(k1, k2)]
            wins, losses = kernels.sweep_range(
                variant.pits, variant.win_kazan, k1, stones, 0, size,
                own, codes[(k2, k1)], deps[(k1, k2)], variant.binom, own, 0,
            )
            result.evaluations += undecided[(k1, k2)]
            undecided[(k1, k2)] -= wins + losses
            decided += wins + losses
        result.sweeps += 1
        result.decided_per_sweep.append(decided)
        if decided == 0:
            break
    result.seconds = time.perf_counter() - start
    return result
