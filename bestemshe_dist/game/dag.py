"""The DAG of pairs and layers for a variant (pure Python: easy to test and print).

A non-capturing move goes from layer (a, b) to (b, a): the two are one *pair*,
solved together. A capture goes to a layer with more stones captured, so pairs
are ordered by m = k1 + k2, largest first, and a pair depends on the layers its
captures reach (SPEC.md, "Layers and their order").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError
from ..naming import layer_name, pair_key
from .geometry import capture_targets, pair_layers
from .variant import Variant


@dataclass(frozen=True)
class PairPlan:
    a: int
    b: int  # a <= b
    layers: tuple  # ((a, b), (b, a)) or ((a, a),)
    layer_size: int  # positions in each layer of the pair
    deps: tuple  # layers reached by captures, sorted
    dep_positions: int = 0  # positions in those layers

    @property
    def key(self) -> str:
        return pair_key(self.a, self.b)

    @property
    def captured(self) -> int:
        return self.a + self.b

    @property
    def positions(self) -> int:
        return self.layer_size * len(self.layers)


@dataclass(frozen=True)
class Plan:
    variant: Variant
    min_captured: int
    pairs: tuple  # in a valid solving order (largest m first)

    @property
    def layers(self) -> list:
        return [layer for p in self.pairs for layer in p.layers]

    @property
    def inputs(self) -> list:
        """Dependency layers the plan does not solve (solve --pair A B): they must be
        published in the output already."""
        own = set(self.layers)
        return sorted({d for p in self.pairs for d in p.deps if d not in own})

    @property
    def positions(self) -> int:
        return sum(p.positions for p in self.pairs)

    def pair_by_key(self, key: str) -> PairPlan:
        return next(p for p in self.pairs if p.key == key)

    def pair_of(self, layer) -> PairPlan:
        a, b = sorted(layer)
        for p in self.pairs:
            if (p.a, p.b) == (a, b):
                return p
        raise KeyError(layer)

    def describe(self) -> str:
        v = self.variant
        lines = [
            f"# {v.describe()}: {len(self.pairs)} pairs, {len(self.layers)} layers, "
            f"{self.positions:,} positions (k1 + k2 >= {self.min_captured})",
            "# m     pair         layer size  positions  depends on",
        ]
        for p in self.pairs:
            deps = " ".join(layer_name(*d) for d in p.deps) or "-"
            lines.append(f"{p.captured:3d}  {p.key:<12} {p.layer_size:12,d} {p.positions:10,d}  {deps}")
        return "\n".join(lines)


def make_plan(variant: Variant, min_captured: int = 0) -> Plan:
    top = 2 * (variant.win_kazan - 2)
    if min_captured < 0 or min_captured > top:
        raise UsageError(
            f"--min-captured must be from 0 to {top} for the {variant.stones}-stone game, not {min_captured}."
        )
    pairs = []
    for m in range(top, min_captured - 1, -1):
        for a in variant.kazans:
            b = m - a
            if b < a or b not in variant.kazans:
                continue
            pairs.append(pair_plan(variant, a, b))
    return Plan(variant, min_captured, tuple(pairs))


def pair_plan(variant: Variant, a: int, b: int) -> PairPlan:
    a, b = sorted((a, b))
    for k in (a, b):
        variant.check_layer(k, 0)
    layers = tuple(pair_layers(a, b))
    deps = tuple(sorted({t for layer in layers for t in capture_targets(variant, *layer)}))
    return PairPlan(a, b, layers, variant.layer_size(a, b), deps, sum(variant.layer_size(*d) for d in deps))


def single_pair_plan(variant: Variant, a: int, b: int) -> Plan:
    """A plan of one pair (solve --pair A B, with synthetic dependency layers)."""
    return Plan(variant, a + b, (pair_plan(variant, a, b),))
