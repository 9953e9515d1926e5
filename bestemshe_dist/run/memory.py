"""What a pair needs in memory on each host, before it starts (plan, the driver).

A large pair on a host (hostpair.py): its codes, 2 bits a position of each
layer (3 bits when it is solved by counting: hostcount.py, and then on one host
only); its round array, 2 bits a position of one layer (a frontier round's
decisions gather there, one layer after the other); its dependency layers, 2 bits a position each, whole pages; and each
running task a chunk's worth: a sweep's decisions, a frontier's sources, a
checkpoint read, or at publication a chunk's bitsets or distances. On top, a
fixed cost per worker process (Python, numba's compiled kernels, Dask).
Distances (--dtz) are never held for a whole layer: publication rebuilds them a
chunk at a time from the checkpoints.

The figures are what the solve of the pairs with k1 + k2 >= 28 measured on this
machine class (benchmarks/scale_bench.py prints the measured side by side).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..game.dag import PairPlan, Plan
from ..game.variant import Variant
from ..naming import counted, layer_name
from ..solve.counting import state_bytes
from ..solve.pair import COUNTING, FRONTIER
from .hostmem import page_round

GiB = 1 << 30
# A worker process before it holds any layer: Python, numpy, numba with the
# kernels loaded, distributed. Measured: 190-240 MiB after warm-up.
PROCESS_BYTES = 300 << 20
# What one running task holds per position of its chunk, at most: publishing
# distances (one byte a position, two for long layers, plus the position's
# share of a 4 MiB block being compressed) is the largest; a frontier task holds
# its sources and one checkpoint (2 bits each), a sweep its decisions.
TASK_BYTES_PER_POSITION = 3.0
TASK_FIXED_BYTES = 24 << 20


def code_bytes(positions: int) -> int:
    """2 bits a position, in whole uint64 words."""
    return 8 * max(1, (positions + 31) // 32)


def layer_bytes(variant: Variant, layer: tuple[int, int]) -> int:
    """A dependency layer's slot in host memory (whole pages)."""
    return 8 * page_round(max(1, (variant.layer_size(*layer) + 31) // 32))


@dataclass(frozen=True)
class HostMemory:
    """Bytes a pair needs on one host."""

    pair: int  # codes and round arrays
    deps: int  # its dependency layers
    tasks: int  # the running tasks' chunks
    processes: int  # the worker processes' fixed cost

    @property
    def total(self) -> int:
        return self.pair + self.deps + self.tasks + self.processes


def values_bytes(pair: PairPlan, method: str) -> int:
    """A large pair's own arrays on a host: each layer's values (2-bit codes, or
    3-bit states when counting) and one layer's round array (2 bits)."""
    per_layer = state_bytes(pair.layer_size) if method == COUNTING else code_bytes(pair.layer_size)
    return per_layer * len(pair.layers) + code_bytes(pair.layer_size)


def task_bytes(chunk_size: int, layer_size: int) -> int:
    return int(TASK_BYTES_PER_POSITION * min(chunk_size, layer_size)) + TASK_FIXED_BYTES


def pair_memory(
    variant: Variant,
    pair: PairPlan,
    chunk_size: int,
    threads: int,
    processes: int,
    deps: set[tuple[int, int]] | None = None,
    method: str = FRONTIER,
) -> HostMemory:
    """A large pair's need on one host running `threads` tasks at once in
    `processes` worker processes. `deps`: the dependency layers held (by default
    the pair's own; pairs in flight together share theirs)."""
    held = pair.deps if deps is None else deps
    return HostMemory(
        pair=values_bytes(pair, method),
        deps=sum(layer_bytes(variant, layer) for layer in held),
        tasks=threads * task_bytes(chunk_size, pair.layer_size),
        processes=processes * PROCESS_BYTES,
    )


def choose_method(
    variant: Variant,
    pair: PairPlan,
    chunk_size: int,
    threads: int,
    processes: int,
    budget: int,
    room: int | None = None,
) -> str:
    """Counting where the pair's states fit a host of `budget` bytes (and its
    shared-memory folder's `room`), else the frontier method, which needs a bit
    a position of each layer less."""
    need = pair_memory(variant, pair, chunk_size, threads, processes, method=COUNTING)
    fits = need.total <= budget and (room is None or need.pair + need.deps <= room)
    return COUNTING if fits else FRONTIER


def together(
    variant: Variant,
    pairs: list[PairPlan],
    chunk_size: int,
    threads: int,
    processes: int,
    methods: list[str] | None = None,
) -> HostMemory:
    """Large pairs in flight on the same hosts: their arrays add up, their
    dependency layers are held once, the tasks and processes are the same."""
    deps = set().union(*(set(p.deps) for p in pairs)) if pairs else set()
    largest = max((p.layer_size for p in pairs), default=0)
    methods = methods or [FRONTIER] * len(pairs)
    return HostMemory(
        pair=sum(values_bytes(p, m) for p, m in zip(pairs, methods, strict=True)),
        deps=sum(layer_bytes(variant, layer) for layer in deps),
        tasks=threads * task_bytes(chunk_size, largest) if pairs else 0,
        processes=processes * PROCESS_BYTES,
    )


def plan_peak(
    plan: Plan, chunk_size: int, threads: int, processes: int, budget: int | None = None
) -> HostMemory:
    """The largest need of any one pair of the plan, solved alone (the driver
    runs large pairs together only as far as they fit), each by the method a
    host of `budget` bytes gives it (None: the frontier method)."""
    peaks = [
        pair_memory(
            plan.variant,
            p,
            chunk_size,
            threads,
            processes,
            method=method_on(plan.variant, p, chunk_size, threads, processes, budget),
        )
        for p in plan.pairs
    ]
    return max(peaks, key=lambda m: m.total) if peaks else HostMemory(0, 0, 0, processes * PROCESS_BYTES)


def method_on(
    variant: Variant, pair: PairPlan, chunk_size: int, threads: int, processes: int, budget: int | None
) -> str:
    if budget is None:
        return FRONTIER
    return choose_method(variant, pair, chunk_size, threads, processes, budget)


def gib(n: int) -> str:
    """Bytes for a person: GiB, or MiB below one."""
    return f"{n / GiB:.2f} GiB" if n >= GiB else f"{n / 2**20:.0f} MiB"


def describe(plan: Plan, chunk_size: int, threads: int, processes: int, budget: int) -> str:
    """The plan with, per pair, its dependency positions, the method a host of
    `budget` bytes gives it and what it then needs on that host (a pair whose
    layers fit a chunk is solved whole by one task, by counting)."""
    v = plan.variant
    peak = plan_peak(plan, chunk_size, threads, processes, budget)
    lines = [
        f"# {v.describe()}: {counted(len(plan.pairs), 'pair')}, {counted(len(plan.layers), 'layer')}, "
        f"{plan.positions:,} positions (k1 + k2 >= {plan.min_captured})",
        f"# memory per host for {counted(threads, 'running task')} in {counted(processes, 'worker process', 'worker processes')}, chunks of "
        f"{chunk_size:,} positions: at most {gib(peak.total)} of {gib(budget)}",
        "# counting: 3 bits a position of each layer (each move generated once); frontier: 2 bits, "
        "for a pair whose counting states do not fit a host",
        "# m     pair         layer size      positions   dep positions  method    host memory  depends on",
    ]
    for p in plan.pairs:
        deps = " ".join(layer_name(*d) for d in p.deps) or "-"
        method = method_on(v, p, chunk_size, threads, processes, budget)
        need = pair_memory(v, p, chunk_size, threads, processes, method=method)
        lines.append(
            f"{p.captured:3d}  {p.key:<12} {p.layer_size:14,d} {p.positions:14,d} "
            f"{p.dep_positions:15,d}  {method:<9}{need.total / GiB:8.2f} GiB  {deps}"
        )
    return "\n".join(lines)
