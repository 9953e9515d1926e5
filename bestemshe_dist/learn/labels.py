"""Labels of many positions of one layer at once, straight from the codes: the
value for the side to move and, for each pit, whether it is legal and the value
the move leaves the mover. A task loads its pair's codes and their capture
targets once (as the solver does) and labels its positions in one numba call;
no probe goes through the block reader per position.

Values are 1 (win), 0 (draw) and -1 (loss) for the side to move, as
Tablebase.probe_many gives them; ILLEGAL marks an empty pit's move.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
from numba import njit

from ..game.geometry import capture_targets, pair_layers, partner
from ..game.rules import MOVE_EMPTY, MOVE_WIN, child_rank, landing, unrank
from ..game.variant import Variant
from ..solve import code_arrays, kernels
from ..solve.code_arrays import Codes
from ..solve.pair import dep_bundle
from ..solve.prefetch import prefetch

# A layer's arrays for label_layer: (own, other, deps, dep_start), see pair_codes
LayerBundle: TypeAlias = tuple[Codes, Codes, Codes, npt.NDArray[np.int64]]
# (boards (N, board), value (N,), after (N, pits)), int8 each
LabelArrays: TypeAlias = tuple[npt.NDArray[np.int8], npt.NDArray[np.int8], npt.NDArray[np.int8]]

ILLEGAL = -2
# code -> value for the side to move: UNKNOWN (a draw once solved), WIN, LOSS
_VALUE_OF_CODE = np.array([0, 1, -1, 0], np.int8)
assert (code_arrays.UNKNOWN, code_arrays.WIN, code_arrays.LOSS) == (0, 1, 2)


GROUP = 32  # positions whose children are asked for before any is read (see label_ranks)
_WIN_AT_ONCE = -1
_EMPTY = -2


@njit(cache=True, nogil=True)
def label_ranks(
    pits,
    win_kazan,
    k1,
    stones,
    ranks,
    own,
    other,
    deps,
    dep_start,
    binom,
    value_of_code,
    boards,
    value,
    after,
):
    """For each rank of layer (k1, .): its board, its value (own codes) and each
    move's value for the mover: a win at once, else the child's value (in the
    partner layer `other`, or after a capture in `deps` from dep_start) flipped;
    ILLEGAL for an empty pit.

    In groups of GROUP positions: first every child's index, each prefetched,
    then the reads. Read one at a time, the children of a large layer's random
    positions cost a cache miss each: 0.9 us a position over m24's layers,
    against 0.25 us with the reads in flight (measured on one core of this
    project's 2-core machine)."""
    board = np.empty(2 * pits, np.int64)
    kids = np.empty((GROUP, pits), np.int64)  # child index, or _WIN_AT_ONCE / _EMPTY
    in_deps = np.zeros((GROUP, pits), np.bool_)
    for first in range(0, ranks.shape[0], GROUP):
        last = min(first + GROUP, ranks.shape[0])
        for i in range(first, last):
            r = ranks[i]
            unrank(r, stones, binom, board)
            for j in range(2 * pits):
                boards[i, j] = board[j]
            prefetch(own, r >> 5)
            opponent = kernels.opponent_stones(board, pits)
            for pit in range(pits):
                outcome, captured, laps, rest, keep, lands = landing(
                    board, opponent, pit, pits, k1, win_kazan
                )
                if outcome == MOVE_EMPTY:
                    kids[i - first, pit] = _EMPTY
                elif outcome == MOVE_WIN:
                    kids[i - first, pit] = _WIN_AT_ONCE
                else:
                    child = child_rank(board, pit, pits, binom, captured, laps, rest, keep, lands)
                    if captured == 0:
                        in_deps[i - first, pit] = False
                        prefetch(other, child >> 5)
                    else:
                        child += dep_start[captured // 2 - 1]
                        in_deps[i - first, pit] = True
                        prefetch(deps, child >> 5)
                    kids[i - first, pit] = child
        for i in range(first, last):
            value[i] = value_of_code[code_arrays.get_code(own, ranks[i])]
            for pit in range(pits):
                child = kids[i - first, pit]
                if child == _EMPTY:
                    after[i, pit] = ILLEGAL
                elif child == _WIN_AT_ONCE:
                    after[i, pit] = 1
                elif in_deps[i - first, pit]:
                    after[i, pit] = -value_of_code[code_arrays.get_code(deps, child)]
                else:
                    after[i, pit] = -value_of_code[code_arrays.get_code(other, child)]


def pair_codes(
    load: Callable[[tuple[int, int]], Codes], variant: Variant, a: int, b: int
) -> dict[tuple[int, int], LayerBundle]:
    """layer -> (own, other, deps, dep_start) for the layers of pair (a, b): their
    codes, each other's, and their capture targets end to end; `load(layer)`
    gives a layer's codes (a LayerReader's codes(), every block checked where
    there are checksums, or a cache in front of it)."""
    layers = pair_layers(a, b)
    needed = set(layers) | {t for layer in layers for t in capture_targets(variant, *layer)}
    codes = {layer: load(layer) for layer in sorted(needed)}
    return {
        layer: (codes[layer], codes[partner(layer)], *dep_bundle(variant, *layer, codes)) for layer in layers
    }


def label_layer(
    variant: Variant, layer: tuple[int, int], bundle: LayerBundle, ranks: npt.NDArray[np.integer[Any]]
) -> LabelArrays:
    """(boards (N, board) int8, value (N,) int8, after (N, pits) int8) of `ranks` in `layer`."""
    k1, k2 = layer
    n = ranks.shape[0]
    boards = np.empty((n, variant.board), np.int8)
    value = np.empty(n, np.int8)
    after = np.empty((n, variant.pits), np.int8)
    own, other, deps, dep_start = bundle
    label_ranks(
        variant.pits,
        variant.win_kazan,
        k1,
        variant.board_stones(k1, k2),
        np.ascontiguousarray(ranks, np.int64),
        own,
        other,
        deps,
        dep_start,
        variant.binom,
        _VALUE_OF_CODE,
        boards,
        value,
        after,
    )
    return boards, value, after


def draw_ranks(
    variant: Variant,
    layer: tuple[int, int],
    bundle: LayerBundle,
    count: int,
    rng: np.random.Generator,
    with_no_move: bool,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8], npt.NDArray[np.int8], npt.NDArray[np.int8]]:
    """`count` positions of `layer` drawn uniformly (among those with a move unless
    `with_no_move`): (ranks, boards, value, after). A position with no move is
    drawn again from the same generator, so the draw depends on the seed only."""
    size = variant.layer_size(*layer)
    ranks = rng.integers(0, size, count, dtype=np.int64)
    boards, value, after = label_layer(variant, layer, bundle, ranks)
    if not with_no_move:
        while True:
            stuck = np.flatnonzero((after == ILLEGAL).all(axis=1))
            if stuck.shape[0] == 0:
                break
            ranks[stuck] = rng.integers(0, size, stuck.shape[0], dtype=np.int64)
            boards[stuck], value[stuck], after[stuck] = label_layer(variant, layer, bundle, ranks[stuck])
    return ranks, boards, value, after


def positions_with_a_move(variant: Variant, layer: tuple[int, int]) -> int:
    """A layer's positions less those whose mover has no stone (every stone on the
    other side: the compositions of the board's stones into `pits` pits)."""
    stones = variant.board_stones(*layer)
    return variant.layer_size(*layer) - int(variant.binom[stones + variant.pits - 1, variant.pits - 1])
