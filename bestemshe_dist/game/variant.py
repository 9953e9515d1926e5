"""A game variant (stones, pits per side) and the numbers derived from it (SPEC.md)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import comb
from numbers import Integral

import numpy as np

from ..errors import UsageError

# The largest capture index a kernel accepts (see kernels.MAX_DEPS): a capture of
# c stones goes to dependency slot c // 2 - 1, and win_kazan <= 2 * MAX_DEPS + 2.
MAX_STONES = 62


@dataclass(frozen=True)
class Variant:
    stones: int = 50
    pits: int = 5

    def __post_init__(self) -> None:
        if not isinstance(self.stones, Integral) or not isinstance(self.pits, Integral):
            raise UsageError("stones and pits must be integers.")
        object.__setattr__(self, "stones", int(self.stones))
        object.__setattr__(self, "pits", int(self.pits))
        if self.stones < 2 or self.stones % 2 or self.stones > MAX_STONES:
            raise UsageError(f"--stones must be an even number from 2 to {MAX_STONES}, not {self.stones}.")
        if not 1 <= self.pits <= 5:
            raise UsageError(f"--pits must be from 1 to 5, not {self.pits}.")

    @property
    def board(self) -> int:
        """Pits on the whole board (both sides)."""
        return 2 * self.pits

    @property
    def win_kazan(self) -> int:
        """The smallest even kazan above half the stones: reaching it wins at once."""
        return 2 * (self.stones // 4) + 2

    @property
    def kazans(self) -> range:
        """Stored kazan values: the even numbers below win_kazan."""
        return range(0, self.win_kazan - 1, 2)

    @property
    def layers(self) -> list[tuple[int, int]]:
        return [(k1, k2) for k1 in self.kazans for k2 in self.kazans]

    def board_stones(self, k1: int, k2: int) -> int:
        return self.stones - k1 - k2

    def layer_size(self, k1: int, k2: int) -> int:
        """C(r + n - 1, n - 1): every way to put r stones into n pits."""
        n = self.board
        return comb(self.board_stones(k1, k2) + n - 1, n - 1)

    def check_layer(self, k1: int, k2: int) -> None:
        for name, k in (("k1", k1), ("k2", k2)):
            if k not in self.kazans:
                raise UsageError(
                    f"{name}={k} is not a stored kazan of the {self.stones}-stone game "
                    f"(even, 0..{self.win_kazan - 2})."
                )

    @cached_property
    def binom(self) -> np.ndarray:
        """binom[n, k] = C(n, k) for the rank formula; int64 is exact far past 10^11."""
        rows = self.stones + self.board + 1
        table = np.zeros((rows, self.board + 1), dtype=np.int64)
        for n in range(rows):
            for k in range(min(n, self.board) + 1):
                table[n, k] = comb(n, k)
        return table

    def describe(self) -> str:
        return f"{self.stones} stones, {self.pits} pits per side"

    def as_dict(self) -> dict[str, int]:
        return {"stones": self.stones, "pits": self.pits}
