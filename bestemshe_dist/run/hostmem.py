"""Arrays shared by every worker process of a host: one copy per host, not per process.

A large pair's codes, its round array and its dependency layers are read at
random by every task of every round, so each host needs them whole. Kept in a
process they would be copied once per worker process (and the default local
cluster has one process per core): 4.2 GiB of codes for the largest pair times
the processes, plus 9.1 GiB of dependencies times the processes. Here each lives
in one file in a RAM-backed folder (/dev/shm where it has room), mapped by every
process of the host that needs it, so the host holds it once, however many
processes and threads work on it. Tasks never copy these arrays: sweeps read
them and write chunk-local decisions, frontier rounds write the shared round
array with atomic operations (atomics.py).

Files of one solve run live in `<root>/bestemshe-<uid>/<space>/`; the driver
names the space (a hash of the output URL and a run id), removes spaces that
earlier runs into the same output left behind (a crash leaves them in RAM), and
removes its own at the end. Creating an array is done once per host under a
file lock: the first process fills it and leaves a `.ready` mark with what it
holds; the others wait for the lock, then map it.

When every host runs a single worker process (its threads share it), the driver
names a private space (`private_name`): the arrays are then the process's own
anonymous memory, which Linux backs with 2 MiB pages where files in /dev/shm get
4 KiB ones (shmem_enabled is "never" on common kernels). The kernels' reads land
at random in arrays of 0.1-4 GiB, so the page size is the TLB's reach: pair
8-12's LOSS sources of round 2 took 10.5 s on /dev/shm arrays against 8.2 s on
private ones, one process, same data. A private space's locks and marks live in
a folder of the process (`p<pid>`), so a worker that is restarted starts from
nothing and rebuilds its pair from the checkpoints, as a new host would.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import mmap
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

PAGE_WORDS = mmap.PAGESIZE // 8
ROOT_ENV = "BESTEMSHE_HOST_MEMORY"
PRIVATE = "-private"  # the end of a private space's name


class SpaceRemoved(RuntimeError):
    """A task of a solve run that has ended reached for the run's host arrays."""


def private_name(name: str) -> str:
    return name + PRIVATE


def is_private(name: str) -> bool:
    return name.endswith(PRIVATE)


def root() -> Path:
    """Where host arrays live: $BESTEMSHE_HOST_MEMORY, else /dev/shm (RAM-backed,
    so nothing is written to disk), else the temporary folder."""
    chosen = os.environ.get(ROOT_ENV)
    if not chosen:
        shm = Path("/dev/shm")
        chosen = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else tempfile.gettempdir()
    return Path(chosen) / f"bestemshe-{os.getuid()}"


def host_id() -> str:
    """This machine, as the same string from every process on it (boot id: two
    containers of one name on different machines still differ)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}/{boot}"


def free_bytes() -> int:
    """Bytes the host arrays' folder can still take."""
    folder = root()
    folder.mkdir(parents=True, exist_ok=True)
    stats = os.statvfs(folder)
    return stats.f_bavail * stats.f_frsize


def page_round(words: int) -> int:
    """Words padded to a whole number of pages (so a slot can be freed alone)."""
    return -(-words // PAGE_WORDS) * PAGE_WORDS


class HostSpace:
    """One solve run's arrays on this host. Every process has one HostSpace per
    space name (see `space`), holding its mappings."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.private = is_private(name)
        # A private space's marks say what this process holds, so they are its own.
        self.folder = root() / name / f"p{os.getpid()}" if self.private else root() / name
        self._maps: dict[str, tuple[NDArray[np.uint64], str]] = {}  # name -> (array, identity)
        self._lock = threading.Lock()
        # Set by remove(): a task still running when its solve ended (a running task
        # cannot be cancelled) must not make the space's folder again behind it.
        self.removed = False

    # -- locks and small state files ----------------------------------------------------
    @contextlib.contextmanager
    def locked(self, name: str) -> Iterator[None]:
        """An exclusive lock of this host (every process, every thread) on `name`."""
        if self.removed:
            raise SpaceRemoved(f"the host arrays of {self.name} are gone: its solve run has ended")
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / f"{name}.lock", "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def read_state(self, name: str, default: Any = None) -> Any:
        try:
            return json.loads((self.folder / f"{name}.json").read_text())
        except (OSError, ValueError):
            return default

    def forget_state(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.folder / f"{name}.json").unlink()

    def write_state(self, name: str, value: Any) -> None:
        path = self.folder / f"{name}.json"
        tmp = path.with_suffix(f".tmp{os.getpid()}-{threading.get_ident()}")
        tmp.write_text(json.dumps(value))
        os.replace(tmp, path)

    # -- arrays ------------------------------------------------------------------------------
    def array(
        self,
        name: str,
        words: int,
        fill: Callable[[NDArray[np.uint64]], object] | None = None,
        identity: str = "",
    ) -> NDArray[np.uint64]:
        """The host's uint64 array `name` of `words` words (zeros when made). `fill(array)`
        runs once per host, by the process that makes it; `identity` says what it
        holds, and a different one makes it anew."""
        with self._lock:
            mapped = self._maps.get(name)
        if mapped is not None and mapped[1] == identity:
            return mapped[0]
        with self.locked(name):
            if self.private:
                return self._private_array(name, words, fill, identity)
            ready = self.read_state(f"{name}.ready")
            path = self.folder / f"{name}.u64"
            if ready is None or ready.get("identity") != identity or ready.get("words") != words:
                self._unmap(name)
                with open(path, "wb") as handle:
                    handle.truncate(words * 8)  # sparse: pages are taken when written
                array = np.memmap(path, dtype=np.uint64, mode="r+", shape=(words,))
                if fill is not None:
                    fill(array)
                self.write_state(f"{name}.ready", {"identity": identity, "words": words})
            else:
                array = np.memmap(path, dtype=np.uint64, mode="r+", shape=(words,))
        with self._lock:
            self._maps[name] = (array, identity)
        return array

    def _private_array(
        self, name: str, words: int, fill: Callable[[NDArray[np.uint64]], object] | None, identity: str
    ) -> NDArray[np.uint64]:
        """array() in a private space (called under the name's lock): another thread
        may have made it meanwhile."""
        with self._lock:
            mapped = self._maps.get(name)
        if mapped is not None and mapped[1] == identity and mapped[0].shape[0] == words:
            return mapped[0]
        # Anonymous pages are taken when written, as a sparse file's are.
        memory = mmap.mmap(-1, words * 8, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        memory.madvise(mmap.MADV_HUGEPAGE)
        array = np.frombuffer(memory, dtype=np.uint64)
        if fill is not None:
            fill(array)
        self.write_state(f"{name}.ready", {"identity": identity, "words": words})
        with self._lock:
            self._maps[name] = (array, identity)
        return array

    def has(self, name: str, identity: str | None = None) -> bool:
        ready = self.read_state(f"{name}.ready")
        return ready is not None and (identity is None or ready.get("identity") == identity)

    def free(self, name: str, first_word: int, words: int) -> None:
        """Give the pages of words [first_word, first_word + words) back to the host
        (they read as zeros after); both ends must be page-aligned."""
        with self._lock:
            mapped = self._maps.get(name)
        if mapped is None or words <= 0:
            return
        # Any: to numpy's stubs a base is an array, and a memmap's _mmap is private
        array: Any = mapped[0]
        if self.private:  # np.frombuffer's base is a memoryview of the anonymous mmap
            array.base.obj.madvise(mmap.MADV_DONTNEED, first_word * 8, words * 8)
        else:
            array._mmap.madvise(mmap.MADV_REMOVE, first_word * 8, words * 8)

    def _unmap(self, name: str) -> None:
        # Never closed by hand: a task may still hold a view; the pages go with the last reference.
        with self._lock:
            self._maps.pop(name, None)

    def mark(self, name: str, identity: str) -> None:
        """Record that `name` (a slot of an array, filled under its lock) holds `identity`."""
        self.write_state(f"{name}.ready", {"identity": identity})

    def unmark(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.folder / f"{name}.ready.json").unlink()

    def drop(self, names: Iterable[str]) -> None:
        """Forget arrays on this host (every process should call it: each mapping
        keeps its pages until it is closed)."""
        for name in names:
            with self._lock:
                self._maps.pop(name, None)  # a private array goes with its last view
            for suffix in (".u64", ".ready.json"):
                with contextlib.suppress(FileNotFoundError):
                    (self.folder / f"{name}{suffix}").unlink()

    def bytes_held(self) -> int:
        """Bytes of RAM the space's arrays hold now (pages taken, not their size)."""
        if self.private:
            with self._lock:
                arrays = [array for array, _ in self._maps.values()]
            return sum(_resident_bytes(array) for array in arrays)
        if not self.folder.exists():
            return 0
        return sum(p.stat().st_blocks * 512 for p in self.folder.glob("*.u64"))

    def remove(self) -> None:
        with self._lock:
            self.removed = True
            self._maps.clear()
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.private:
            with contextlib.suppress(OSError):
                self.folder.parent.rmdir()  # the space's folder, once no process has one there


def _resident_bytes(array: NDArray[np.uint64]) -> int:
    """Bytes of a private array's pages in RAM (mincore(2))."""
    import ctypes

    size = array.nbytes
    pages = -(-size // mmap.PAGESIZE)
    vec = np.zeros(pages, np.uint8)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    if libc.mincore(
        ctypes.c_void_p(array.ctypes.data), ctypes.c_size_t(size), vec.ctypes.data_as(ctypes.c_void_p)
    ):
        return size  # cannot tell: count it all
    return int(np.count_nonzero(vec & 1)) * mmap.PAGESIZE


_SPACES: dict[str, HostSpace] = {}
_SPACES_LOCK = threading.Lock()


def space(name: str) -> HostSpace:
    with _SPACES_LOCK:
        found = _SPACES.get(name)
        if found is None:
            found = _SPACES[name] = HostSpace(name)
        return found


def remove_spaces(prefix: str, keep: str | None = None) -> int:
    """Remove this host's spaces whose name starts with `prefix` (but `keep`):
    what earlier runs into the same output left in RAM. Returns how many."""
    removed = 0
    base = root()
    if not base.exists():
        return 0
    for folder in base.glob(f"{prefix}*"):
        if folder.name != keep:
            with _SPACES_LOCK:
                held = _SPACES.get(folder.name)  # kept, marked removed: see HostSpace.removed
            if held is not None:
                held.remove()
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed
