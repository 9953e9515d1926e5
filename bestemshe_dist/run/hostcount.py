"""A large pair solved by counting (solve/counting.py), on one host.

A count is only right if its position's every WIN child was walked on the same
host, and a walk that died half way has taken some counts down and not others:
so a counting pair lives on one host at a time, and each round is one task
there (count_round), its chunks spread over the host's threads inside it. The
host's states record the last round they are complete after (`counted_mark`);
a round that finds anything else (a new host, a new run, a try that died)
first brings the states back from the checkpoints in the store: every round's
decisions marked, the counts taken again from the paired layer's WINs (one
forward pass, as round 0), then the last round marked. A round costs its
un-moves, its checkpoint writes and reading the last round's parts back (its
sources); the round array holds one layer's decisions at a time.

What the host holds: 3 bits a position of each layer (the states), the round
array (2 bits a position of one layer) and the dependency rows (hostpair.py).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from ..data.checkpoint import decode_part
from ..data.store import read_json, redact
from ..errors import first_line
from ..game.dag import PairPlan
from ..game.geometry import partner
from ..naming import counted_mark, parse_part, round_array, round_marker, states_array
from ..solve import code_arrays, counting
from ..solve.counting import CountingState
from ..solve.pair import Delta, chunk_ranges
from . import hostmem
from .hostpair import DepSource, PairsHeld, dep_bundle

if TYPE_CHECKING:
    from .tasks import Job

T = TypeVar("T")
R = TypeVar("R")

# Decisions a walk call logs (8 bytes each, per thread): a round whose walks all
# fit writes its parts from the logs, without a scan of the layer's round array.
LOG_POSITIONS = 1 << 16
_NONE = np.zeros(0, np.int64)
_NO_VALUES = np.zeros(0, np.uint8)
_NO_CODES = np.zeros(1, np.uint64)


def counting_arrays(pair: PairPlan) -> list[str]:
    return [states_array(pair.key, layer) for layer in pair.layers] + [round_array(pair.key)]


class HostCounting:
    """A counting pair's states on this host, with the round they are complete after."""

    def __init__(
        self, job: Job, pair: PairPlan, dep_shas: dict[tuple[int, int], str], source: DepSource
    ) -> None:
        self.job = job
        self.pair = pair
        self.space = hostmem.space(job.space)
        words = counting.state_words(pair.layer_size)
        states = {l: self.space.array(states_array(pair.key, l), words) for l in pair.layers}
        shared = self.space.array(round_array(pair.key), code_arrays.code_words(pair.layer_size))
        found = dict.fromkeys(pair.layers, shared)
        bundles = {l: dep_bundle(self.space, job, source, *l, dep_shas) for l in pair.layers}
        self.state = CountingState(job.variant, pair.a, pair.b, states=states, found=found, bundles=bundles)

    def complete_after(self) -> int | None:
        mark = self.space.read_state(counted_mark(self.pair.key), {})
        return mark.get("round") if mark.get("complete") else None

    def note(self, round_: int, complete: bool, failed: str | None = None) -> None:
        mark: dict[str, Any] = {"round": round_, "complete": complete}
        if failed:
            mark["failed"] = failed
        self.space.write_state(counted_mark(self.pair.key), mark)

    def why_rebuilt(self, after: int) -> str | None:
        """None when the states here are complete after round `after`; else why not,
        in a few words: what a rebuild's log line says (a try that failed is
        otherwise run again by Dask without a word)."""
        mark = self.space.read_state(counted_mark(self.pair.key), {})
        if mark.get("complete") and mark.get("round") == after:
            return None
        if "round" not in mark:
            return "this host held none of its states"
        if mark.get("failed"):
            return f"a try of round {mark['round']} failed: {mark['failed']}"
        if not mark.get("complete"):
            return f"a try of round {mark['round']} stopped before its end"
        return f"this host's states were those after round {mark['round']}, not {after}"

    def reset(self) -> None:
        for states in self.state.states.values():
            states[:] = 0
        self.state.found[self.pair.layers[0]][:] = 0

    def mark_rounds(self, rounds: Iterable[int]) -> None:
        """Mark the checkpointed decisions of `rounds` in the states."""
        store = self.job.store()
        for round_ in rounds:
            marker = read_json(store, round_marker(self.pair.key, round_))
            self.state.apply(decode_part(store.read_bytes(name)) for name in marker["parts"])

    def rebuild(self, upto: int, chunk_size: int, threads: int) -> float:
        """States and counts complete after round `upto`, from the checkpoints (see
        the module's text). Returns the seconds it took."""
        start = time.perf_counter()
        self.reset()
        ranges = chunk_ranges(self.pair.layer_size, chunk_size)
        work = [(layer, lo, hi) for layer in self.pair.layers for lo, hi in ranges]
        if upto == 0:
            # Round 0's states again. A recount would not do: nothing marked yet, a
            # layer's recount sets the WINs round 0 decides at once, and the other
            # layer's recount, after it, would leave them out of its counts, which
            # the next round's walk of round 0's WINs takes down again.
            in_threads(threads, work, lambda w: self.state.first_round(*w))
        else:
            self.mark_rounds(range(upto))
            in_threads(threads, work, lambda w: self.state.recount(*w))
            self.mark_rounds([upto])
        self.note(upto, True)
        return time.perf_counter() - start

    def marked(self, upto: int) -> None:
        """States whose decisions are those of rounds 0..upto (publication needs no
        counts): rebuilt from the checkpoints unless complete after upto here."""
        if self.complete_after() == upto:
            return
        self.reset()
        self.mark_rounds(range(upto + 1))
        self.note(upto, True)


def in_threads(threads: int, items: list[T], work: Callable[[T], R]) -> list[R]:
    """work(item) for every item on up to `threads` threads (the kernels release
    the GIL), results in order; the first failure is raised."""
    if threads <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        return list(pool.map(work, items))


_HOSTS: PairsHeld[HostCounting] = PairsHeld()


def host_counting(
    job: Job, pair: PairPlan, dep_shas: dict[tuple[int, int], str], source: DepSource
) -> HostCounting:
    return _HOSTS.get(job.space, pair, lambda: HostCounting(job, pair, dep_shas, source))


def forget_counting(space_name: str, pair: PairPlan) -> None:
    _HOSTS.forget(space_name, pair)
    space = hostmem.space(space_name)
    space.drop(counting_arrays(pair))
    space.forget_state(counted_mark(pair.key))


def forget_all_counting(space_name: str) -> None:
    _HOSTS.forget_all(space_name)


@contextlib.contextmanager
def _failure_noted(host: HostCounting, round_: int) -> Iterator[None]:
    """A try of a round that raises leaves its error in the host's mark, for the
    next try's rebuild to name: Dask runs the round again without a word."""
    try:
        yield
    except BaseException as exc:
        said = redact(first_line(exc))[:120]
        failed = f"{type(exc).__name__}: {said}" if str(exc).strip() else said
        # Best effort: a space removed under the task (the run ended) must not hide
        # the error that the task raises.
        with contextlib.suppress(Exception):
            host.note(round_, False, failed=failed)
        raise


def count_round(
    job: Job,
    pair: PairPlan,
    dep_shas: dict[tuple[int, int], str],
    round_: int,
    chunk_size: int,
    sources: list[str],
    threads: int,
    tag: str,
    write_part: Callable[[str, Delta], None],
    part_name: Callable[[int, tuple[int, int], int, str], str],
) -> dict[str, Any]:
    """Round `round_` of a counting pair, whole, on this host (see the module's
    text). Round 0 sets every state and writes its decisions chunk by chunk; a
    later round walks, for each layer in turn, the un-moves of its partner's
    decisions of the round before (`sources`: their checkpoint parts), then
    writes this layer's decisions as parts. Returns the parts with their
    decisions, wins, losses, evaluations, un-moves and where the time went."""
    start = time.perf_counter()
    host = host_counting(job, pair, dep_shas, job.dep_source)
    state, space = host.state, host.space
    ranges = chunk_ranges(pair.layer_size, chunk_size)
    result: dict[str, Any] = {
        "parts": {},
        "wins": 0,
        "losses": 0,
        "evaluations": 0,
        "unmoves": 0,
        "task_bytes": 0,
        "phases": {},
        "rebuilt": None,
    }
    phases = result["phases"]
    lock = threading.Lock()

    def add(wins: int, losses: int, evaluations: int = 0, unmoves: int = 0) -> None:
        with lock:
            result["wins"] += wins
            result["losses"] += losses
            result["evaluations"] += evaluations
            result["unmoves"] += unmoves

    with space.locked(counted_mark(pair.key)), _failure_noted(host, round_):
        if round_ == 0:
            mark = time.perf_counter()
            host.reset()
            host.note(0, False)

            def first(item: tuple[tuple[int, int], int, int, int]) -> None:
                layer, c, lo, hi = item
                delta = state.first_round(layer, lo, hi)
                add(delta.wins, delta.losses, delta.evaluations)
                if delta.decided:
                    name = part_name(0, layer, c, "s")
                    write_part(name, delta)
                    with lock:
                        result["parts"][name] = delta.decided

            in_threads(
                threads,
                [(layer, c, lo, hi) for layer in pair.layers for c, (lo, hi) in enumerate(ranges)],
                first,
            )
            phases["kernel"] = time.perf_counter() - mark
            host.note(0, True)
        else:
            why = host.why_rebuilt(round_ - 1)
            if why is not None:
                result["rebuilt_why"] = why
                result["rebuilt"] = phases["rebuild"] = host.rebuild(round_ - 1, chunk_size, threads)
            host.note(round_, False)
            by_chunk: dict[tuple[tuple[int, int], int], list[str]] = {}
            for name in sources:
                found = parse_part(name)
                assert found is not None  # the driver lists parts only
                by_chunk.setdefault(found, []).append(name)
            store = job.store()
            for target in pair.layers:
                source = partner(target)
                mark = time.perf_counter()
                logs: list[tuple[npt.NDArray[np.int64], int]] = []

                def walk(
                    item: tuple[int, int, int],
                    source: tuple[int, int] = source,
                    logs: list[tuple[npt.NDArray[np.int64], int]] = logs,
                ) -> None:
                    c, lo, hi = item
                    parts = [decode_part(store.read_bytes(name)) for name in by_chunk[(source, c)]]
                    log = np.empty(LOG_POSITIONS, np.int64)
                    if all(part.dense is None for part in parts):  # a few sources: walked as a list
                        listed = np.concatenate([p.ranks for p in parts if p.ranks is not None] + [_NONE])
                        values = np.concatenate(
                            [p.values for p in parts if p.values is not None] + [_NO_VALUES]
                        )
                        held = listed.nbytes + values.nbytes
                        if not listed.shape[0]:
                            with lock:
                                logs.append((log, 0))
                            return
                        wins, losses, unmoves, logged = state.walk(
                            source, _NO_CODES, 0, lo, hi, listed, values, log
                        )
                    else:
                        fresh_lo = lo & ~31
                        fresh = code_arrays.new_codes(hi - fresh_lo)
                        for part in parts:
                            part.apply(fresh, offset=fresh_lo)
                        held = fresh.nbytes
                        wins, losses, unmoves, logged = state.walk(source, fresh, fresh_lo, lo, hi, log=log)
                    add(wins, losses, 0, unmoves)
                    with lock:
                        result["task_bytes"] = max(result["task_bytes"], held)
                        logs.append((log, logged))

                todo = [(c, lo, hi) for c, (lo, hi) in enumerate(ranges) if (source, c) in by_chunk]
                in_threads(threads, todo, walk)
                phases["kernel"] = phases.get("kernel", 0.0) + time.perf_counter() - mark
                mark = time.perf_counter()
                if all(logged <= log.shape[0] for log, logged in logs):
                    # Every decision was logged: the parts come from the list, and only
                    # its words of the round array are cleared (a tail round's flush
                    # scanned and cleared the whole layer: 0.1-0.3 s a round).
                    decided = np.sort(np.concatenate([log[:logged] for log, logged in logs] + [_NONE]))
                    edges = np.searchsorted(decided, [hi for _, hi in ranges])
                    for c, (lo, hi) in enumerate(ranges):
                        ranks = decided[(edges[c - 1] if c else 0) : edges[c]]
                        if ranks.shape[0]:
                            # dense where the parts are written dense (tasks._write_part)
                            few = ranks.shape[0] * 16 < hi - lo
                            delta = (
                                state.listed_delta(target, lo, hi, round_, ranks.copy())
                                if few
                                else state.take(target, lo, hi, round_, clear=False)
                            )
                            name = part_name(round_, target, c, tag)
                            write_part(name, delta)
                            result["parts"][name] = delta.decided
                    state.found[target][np.unique(decided >> 5)] = 0
                else:

                    def flush(item: tuple[int, int, int], target: tuple[int, int] = target) -> bool:
                        c, lo, hi = item
                        delta = state.take(target, lo, hi, round_, clear=False)
                        if delta.decided:
                            name = part_name(round_, target, c, tag)
                            write_part(name, delta)
                            with lock:
                                result["parts"][name] = delta.decided
                        return delta.decided > 0

                    items = [(c, lo, hi) for c, (lo, hi) in enumerate(ranges)]
                    # Emptied one chunk after another once written: chunk edges may fall
                    # inside a word, which two threads must not both rewrite.
                    for (_, lo, hi), held in zip(items, in_threads(threads, items, flush), strict=True):
                        if held:
                            state.clear(target, lo, hi)
                phases["flush"] = phases.get("flush", 0.0) + time.perf_counter() - mark
            host.note(round_, True)
    result["seconds"] = time.perf_counter() - start
    return result
