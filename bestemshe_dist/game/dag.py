"""The DAG of pairs and layers for a variant (pure Python: easy to test and print).

A non-capturing move goes from layer (a, b) to (b, a): the two are one *pair*,
solved together. A capture goes to a layer with more stones captured, so pairs
are ordered by m = k1 + k2, largest first, and a pair depends on the layers its
captures reach (SPEC.md, "Layers and their order").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import UsageError
from ..naming import counted, layer_name, pair_key
from .geometry import capture_targets, pair_layers
from .variant import Variant


@dataclass(frozen=True)
class PairPlan:
    a: int
    b: int  # a <= b
    layers: tuple[tuple[int, int], ...]  # ((a, b), (b, a)) or ((a, a),)
    layer_size: int  # positions in each layer of the pair
    deps: tuple[tuple[int, int], ...]  # layers reached by captures, sorted
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
    pairs: tuple[PairPlan, ...]  # in a valid solving order (largest m first)

    @property
    def layers(self) -> list[tuple[int, int]]:
        return [layer for p in self.pairs for layer in p.layers]

    @property
    def inputs(self) -> list[tuple[int, int]]:
        """Dependency layers the plan does not solve (solve --pair A B): they must be
        published in the output already."""
        own = set(self.layers)
        return sorted({d for p in self.pairs for d in p.deps if d not in own})

    @property
    def positions(self) -> int:
        return sum(p.positions for p in self.pairs)

    def pair_by_key(self, key: str) -> PairPlan:
        return next(p for p in self.pairs if p.key == key)

    def pair_of(self, layer: tuple[int, int]) -> PairPlan:
        a, b = sorted(layer)
        for p in self.pairs:
            if (p.a, p.b) == (a, b):
                return p
        raise KeyError(layer)

    def dependents(self) -> dict[str, list[PairPlan]]:
        """pair key -> the pairs of the plan that read one of its layers."""
        owner = {layer: p.key for p in self.pairs for layer in p.layers}
        found: dict[str, list[PairPlan]] = {p.key: [] for p in self.pairs}
        for p in self.pairs:
            for key in sorted({owner[d] for d in p.deps if d in owner}):
                found[key].append(p)
        return found

    def remaining_paths(self, cost: Callable[[PairPlan], float]) -> dict[str, float]:
        """pair key -> the cost of the longest chain of pairs from it to the end of
        the plan (itself included, each pair cost(pair)): what must still run one
        after another once it starts. The pairs are in solving order, so each
        pair's dependents come after it."""
        dependents = self.dependents()
        paths: dict[str, float] = {}
        for p in reversed(self.pairs):
            paths[p.key] = cost(p) + max((paths[q.key] for q in dependents[p.key]), default=0.0)
        return paths

    def describe(self) -> str:
        v = self.variant
        lines = [
            f"# {v.describe()}: {counted(len(self.pairs), 'pair')}, {counted(len(self.layers), 'layer')}, "
            f"{self.positions:,} positions (k1 + k2 >= {self.min_captured})",
            "# m     pair         layer size  positions  depends on",
        ]
        for p in self.pairs:
            deps = " ".join(layer_name(*d) for d in p.deps) or "-"
            lines.append(f"{p.captured:3d}  {p.key:<12} {p.layer_size:12,d} {p.positions:10,d}  {deps}")
        return "\n".join(lines)


def check_min_captured(min_captured: int, what: str = "--min-captured") -> None:
    """A scope k1 + k2 >= M must name an even M: a capture takes an even number of
    stones and the kazans start empty, so every layer's k1 + k2 is even, and an odd M
    would solve the layers of M + 1 while the tablebase's records said M."""
    if min_captured % 2:
        raise UsageError(
            f"{what} must be even, not {min_captured}: every layer's k1 + k2 is even (captures take an even "
            f"number of stones), so give {min_captured - 1} or {min_captured + 1}."
        )


def make_plan(variant: Variant, min_captured: int = 0, what: str = "--min-captured") -> Plan:
    """The pairs of the layers with k1 + k2 >= min_captured; `what` names where the
    number came from in an error (the flag, or a config's key)."""
    top = 2 * (variant.win_kazan - 2)
    if isinstance(min_captured, bool) or not isinstance(min_captured, int):
        raise UsageError(f"{what} must be a whole number, not {min_captured!r}.")
    if min_captured < 0 or min_captured > top:
        raise UsageError(
            f"{what} must be from 0 to {top} for the {variant.stones}-stone game, not {min_captured}."
        )
    check_min_captured(min_captured, what)
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
