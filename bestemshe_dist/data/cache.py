"""One cache for everything loaded from a store: each value is loaded once (the
first thread loads it, the others wait for its result, or its error) and the
least recently used are dropped past a byte budget.

Users: the block reader (headers, checksums, decompressed blocks: the oracle and
verify --sample), the solver's per-worker dependency layers, the verifier's
and `sample`'s per-worker layers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any, TypeVar

# What one get() loads and returns (each key holds what its one loader gives).
_V = TypeVar("_V")


def worker_memory_limit() -> int | None:
    """This Dask worker's memory limit in bytes (None outside a worker, or with none)."""
    try:
        from distributed import get_worker

        limit = get_worker().memory_manager.memory_limit
    except (ImportError, ValueError, AttributeError):
        return None
    return int(limit) if limit else None


def worker_memory_budget(share: float = 0.4) -> int:
    """Bytes a worker process may keep in its caches: `share` of its Dask memory
    limit (4 GiB outside a worker, or with no limit)."""
    limit = worker_memory_limit()
    return int(limit * share) if limit else 4 << 30


class OnceCache:
    """`budget`: bytes, a callable giving them (read at each eviction, so a Dask
    worker's memory limit can be asked for late), or None for no bound.
    `keep_newest`: never drop the value just stored, even past the budget (a
    dependency layer larger than the budget is still used by every task that
    needs it, rather than decoded again for each); without it the bound always
    holds and such a value is used once and dropped."""

    def __init__(self, budget: int | Callable[[], int] | None = None, keep_newest: bool = False) -> None:
        self._budget = budget
        self._keep_newest = keep_newest
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()  # key -> (value, nbytes)
        self._bytes = 0
        self._pending: dict[Hashable, Future[Any]] = {}
        self.hits = 0

    def budget(self) -> int | None:
        return self._budget() if callable(self._budget) else self._budget

    def get(self, key: Hashable, load: Callable[[], tuple[_V, int]]) -> _V:
        """The value of `key`; `load()` returns (value, nbytes) and runs in one thread only."""
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
                self.hits += 1
                cached: _V = item[0]
                return cached
            future = self._pending.get(key)
            owner = future is None
            if future is None:
                future = self._pending[key] = Future()
        if not owner:
            loaded: _V = future.result()
            return loaded
        try:
            value, nbytes = load()
        except BaseException as exc:
            with self._lock:
                del self._pending[key]
            future.set_exception(exc)
            raise
        with self._lock:
            del self._pending[key]
            self._store(key, value, nbytes)
        future.set_result(value)
        return value

    def peek(self, key: Hashable) -> Any:
        """The value of `key` if it is held now, else None (nothing is loaded)."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: object, nbytes: int) -> None:
        with self._lock:
            self._store(key, value, nbytes)

    def _store(self, key: Hashable, value: object, nbytes: int) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        self._items[key] = (value, int(nbytes))
        self._bytes += int(nbytes)
        budget = self.budget()
        if budget is None:
            return
        floor = 1 if self._keep_newest else 0
        while self._bytes > budget and len(self._items) > floor:
            _, (_, size) = self._items.popitem(last=False)
            self._bytes -= size

    def drop(self, match: Callable[[Any], bool]) -> int:
        """Forget every key for which `match(key)` is true; returns how many are left."""
        # `match` takes Any: it knows the shape of the keys its caller chose (tuples).
        with self._lock:
            for key in [k for k in self._items if match(k)]:
                self._bytes -= self._items.pop(key)[1]
            return len(self._items)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)
