"""A position of one variant, written from the side to move: `k1 k2 p0 .. p(2*pits-1)`.

Parsing and validation for users (the oracle's API, `probe`, `play`): every fault
is a UsageError whose one sentence names the number at fault and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np

from ..errors import UsageError
from . import rules
from .variant import Variant

_INTEGER = re.compile(r"[+-]?\d+")


def _names(variant: Variant) -> list[str]:
    return ["k1", "k2", *(f"p{i}" for i in range(variant.board))]


def _integer(name: str, value: object) -> int:
    """One number of a position: an int, or text of one, non-negative."""
    if isinstance(value, bool):
        raise UsageError(f"position: {name} = {value} is not an integer.")
    if isinstance(value, Integral):
        number = int(value)
    elif isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        number = int(value.strip())
    else:
        raise UsageError(f"position: {name} = {value!r} is not an integer.")
    if number < 0:
        raise UsageError(f"position: {name} = {number} is negative; stones and kazans count up from 0.")
    return number


@dataclass(frozen=True)
class Position:
    """`k1` the mover's kazan, `k2` the opponent's, `pits` the mover's row then the
    opponent's (sowing runs along that order). Construction validates."""

    k1: int
    k2: int
    pits: tuple[int, ...]
    variant: Variant = Variant()

    def __post_init__(self) -> None:
        variant = self.variant
        names = _names(variant)
        values = [self.k1, self.k2, *self.pits]
        if len(values) != len(names):
            raise UsageError(
                f"position: expected {len(names)} numbers ({_shape(variant)}) for the game of "
                f"{variant.describe()}, got {len(values)}."
            )
        k1, k2, *pits = (_integer(n, v) for n, v in zip(names, values))
        for name, k in (("k1", k1), ("k2", k2)):
            if k % 2:
                raise UsageError(f"position: {name} = {k} is odd; every capture is even, so kazans are too.")
            if k not in variant.kazans:
                raise UsageError(
                    f"position: {name} = {k} is out of range; a kazan of {variant.win_kazan} or more has "
                    f"already won, so the {variant.stones}-stone game stores 0..{variant.win_kazan - 2}."
                )
        on_board = variant.board_stones(k1, k2)
        if sum(pits) != on_board:
            raise UsageError(
                f"position: the pits hold {sum(pits)} stones, but with k1 = {k1} and k2 = {k2} the "
                f"{variant.stones}-stone game has {on_board} on the board."
            )
        object.__setattr__(self, "k1", k1)
        object.__setattr__(self, "k2", k2)
        object.__setattr__(self, "pits", tuple(pits))

    # -- constructors ---------------------------------------------------------------
    @classmethod
    def parse(cls, values: Any, variant: Variant = Variant()) -> Position:
        """From text ("0 0 5 5 ...", commas allowed) or a sequence of numbers or strings."""
        if isinstance(values, Position):
            if values.variant != variant:
                raise UsageError(
                    f"position: it belongs to the game of {values.variant.describe()}, "
                    f"not of {variant.describe()}."
                )
            return values
        if isinstance(values, str):
            values = [values]
        elif not isinstance(values, (list, tuple, np.ndarray)):
            raise UsageError(
                f"position: give it as text or a list of numbers ({_shape(variant)}), "
                f"not {type(values).__name__}."
            )
        # Text splits at spaces and commas, so "0 0 5 ..." works as one argument or many.
        values = [
            piece
            for value in values
            for piece in (value.replace(",", " ").split() if isinstance(value, str) else [value])
        ]
        if len(values) != 2 + variant.board:
            raise UsageError(
                f"position: expected {2 + variant.board} numbers ({_shape(variant)}) for the game of "
                f"{variant.describe()}, got {len(values)}."
            )
        return cls(values[0], values[1], tuple(values[2:]), variant)

    @classmethod
    def start(cls, variant: Variant = Variant()) -> Position:
        """Every pit holds the same number of stones, both kazans empty (5 each for 50/5)."""
        each, rest = divmod(variant.stones, variant.board)
        if rest:
            raise UsageError(
                f"the game of {variant.describe()} has no start with equal pits "
                f"({variant.stones} stones do not split into {variant.board} pits); give a position."
            )
        return cls(0, 0, (each,) * variant.board, variant)

    @classmethod
    def from_rank(cls, variant: Variant, k1: int, k2: int, index: int) -> Position:
        board = np.empty(variant.board, np.int64)
        rules.unrank(int(index), variant.board_stones(k1, k2), variant.binom, board)
        return cls(k1, k2, tuple(int(x) for x in board), variant)

    # -- views ------------------------------------------------------------------
    @property
    def layer(self) -> tuple[int, int]:
        return (self.k1, self.k2)

    @property
    def own(self) -> tuple[int, ...]:
        return self.pits[: self.variant.pits]

    @property
    def other(self) -> tuple[int, ...]:
        return self.pits[self.variant.pits :]

    def board(self) -> np.ndarray:
        return np.array(self.pits, dtype=np.int64)

    def rank(self) -> int:
        """The index inside the layer's own file (SPEC.md: no offset for k1)."""
        return int(rules.rank(self.board(), self.variant.binom))

    def legal_pits(self) -> list[int]:
        return [i for i, s in enumerate(self.own) if s > 0]

    def __str__(self) -> str:
        return " ".join(str(x) for x in (self.k1, self.k2, *self.pits))


def _shape(variant: Variant) -> str:
    return f"k1 k2 p0..p{variant.board - 1}"


# -- symmetric positions (the published match's starts; the explorer's picker) -----------
def symmetric_halves(variant: Variant, layer: tuple[int, int]) -> int:
    """Ways to fill one side of a symmetric position of `layer` (equal kazans, equal
    stones a side): the compositions of half the board's stones into `pits` pits;
    0 when the layer has no symmetric position."""
    k1, k2 = layer
    stones = variant.board_stones(k1, k2)
    if k1 != k2 or stones % 2 or stones == 0:
        return 0
    return int(variant.binom[stones // 2 + variant.pits - 1, variant.pits - 1])


def random_symmetric(variant: Variant, layer: tuple[int, int], rng: np.random.Generator) -> Position:
    """A symmetric position of `layer`, uniform over all of them (each side drawn
    alone); the side to move always has a move. `rng`: a numpy Generator."""
    ways = symmetric_halves(variant, layer)
    if ways == 0:
        raise UsageError(
            f"layer {layer[0]}_{layer[1]} has no symmetric position "
            "(it needs equal kazans and an even number of stones on the board)."
        )
    half = variant.board_stones(*layer) // 2
    row = np.empty(variant.pits, np.int64)
    pits = []
    for _ in range(2):
        rules.unrank(int(rng.integers(ways)), half, variant.binom, row)
        pits += row.tolist()
    return Position(layer[0], layer[1], tuple(pits), variant)
