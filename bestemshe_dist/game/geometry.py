"""The layer DAG's shape (SPEC.md): which layers form a pair, and where captures lead.

Pure Python, no numpy: the plan, the status command and the kernels' callers
all ask these questions, and the plan must stay importable without numba.
"""

from __future__ import annotations

from .variant import Variant


def pair_layers(a: int, b: int) -> list[tuple[int, int]]:
    """The layers of pair (a, b): a non-capturing move goes from (a, b) to (b, a)."""
    return [(a, b)] if a == b else [(a, b), (b, a)]


def partner(layer: tuple[int, int]) -> tuple[int, int]:
    """The layer a quiet move of `layer` leads to (the mover changes sides)."""
    return (layer[1], layer[0])


def capture_targets(variant: Variant, k1: int, k2: int) -> list[tuple[int, int]]:
    """Layers reached from layer (k1, k2) by a capture that does not end the game:
    (k2, k1 + c) for every even c up to the stones on the board, below the winning kazan."""
    stones = variant.board_stones(k1, k2)
    return [(k2, k1 + c) for c in range(2, stones + 1, 2) if k1 + c <= variant.win_kazan - 2]
