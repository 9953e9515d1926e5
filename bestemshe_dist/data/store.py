"""Where layers live: any fsspec URL (plain path, file://, memory://, s3://, ...).

The only module that does I/O. Publication is atomic: a layer file appears whole
or not at all, and the manifest entry of a layer is written after its files.
Private work files live under `.bestemshe/` beside the layers.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import fsspec

from ..errors import StoreError
from ..game.variant import Variant
from ..naming import MANIFEST, TMP, WIN_FILE_GLOB, round_marker, tmp_file

MANIFEST_FORMAT = "bestemshe-tablebase"
T = TypeVar("T")


def redact(url: str) -> str:
    """The URL without any user:password@ part, safe for logs and errors."""
    return re.sub(r"(?<=://)[^/@]*@", "***@", str(url))


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text.rstrip(".")


# Seconds a store that stops answering is tried again before a command gives up
# (BESTEMSHE_STORE_PATIENCE overrides): long enough for an object store to restart.
STORE_PATIENCE = 120.0
PATIENCE_ENV = "BESTEMSHE_STORE_PATIENCE"
_REACHED: set[str] = set()  # the stores this process has had an answer from
_GONE: set[str] = set()  # those it waited for in vain since

# What a store that does not answer raises, by class name (botocore, aiohttp and
# others have their own classes): tried again, where other faults are final.
_UNREACHABLE = {
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ConnectionClosedError",
    "ClientConnectorError",
    "ServerDisconnectedError",
    "ClientOSError",
}


def store_patience() -> float:
    try:
        return max(0.0, float(os.environ.get(PATIENCE_ENV, STORE_PATIENCE)))
    except ValueError:
        return STORE_PATIENCE


def _unreachable(exc: BaseException) -> bool:
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    return any(cls.__name__ in _UNREACHABLE for cls in type(exc).__mro__)


# An object store's own server errors (HTTP 500 InternalError, 503 SlowDown or
# ServiceUnavailable; s3fs gives them these errnos): the store answered but did not
# do the work. Tried again like a store that does not answer: a server busy, or out
# of room until someone adds some (SeaweedFS with no writable volume left answers a
# write with InternalError, not with a "full" of its own).
_SERVER_ERRNOS = {getattr(errno, "EREMOTEIO", errno.EIO), errno.EBUSY}


class _Unreachable(Exception):
    def __init__(self, reason: str, refused: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.refused = refused  # it answered, with a server error


_READ = [0]  # bytes this process read from any store (what a round costs in I/O)


def _counted(data: bytes) -> bytes:
    if data is not None:
        _READ[0] += len(data)  # a lost update under threads only blurs a statistic
    return data


def bytes_read() -> int:
    """Bytes this process has read from stores so far."""
    return _READ[0]


class Store:
    fs: Any  # an fsspec filesystem (fsspec is untyped)
    root: str

    def __init__(
        self,
        url: str,
        storage_options: dict[str, Any] | None = None,
        patient: bool = False,
        patience: float | None = None,
    ) -> None:
        self.url = str(url).rstrip("/") or str(url)
        self.patient = patient
        self.patience = store_patience() if patience is None else patience
        self.storage_options = dict(storage_options or {})
        self.shown = redact(self.url)
        try:
            self.fs, self.root = fsspec.core.url_to_fs(self.url, **self.storage_options)
        except (ImportError, ValueError, TypeError) as exc:
            raise StoreError(f"cannot open {self.shown}: {_reason(exc)}.") from None
        self.root = self.root.rstrip("/")
        self.local = "file" in _protocols(self.fs)
        # http(s) cannot list a folder: only a manifest says which layers are there
        self.listable = not {"http", "https"} & set(_protocols(self.fs))

    # -- plumbing ---------------------------------------------------------------
    def path(self, name: str) -> str:
        return f"{self.root}/{name}" if self.root else name

    def _call(self, what: str, name: str, work: Callable[[], T], size: int | None = None) -> T:
        """work(), its faults as one sentence each. A store this process has reached
        (or a task's: the driver reached it first) that stops answering is tried
        again, waiting longer each time, for up to `patience` seconds: an object
        store restarting must not fail a solve of hours. One never reached fails
        at once: a wrong address is not worth waiting for."""
        start, pause = time.monotonic(), 0.5
        while True:
            try:
                with self._io(what, name, size):
                    result = work()
                _REACHED.add(self.url)
                _GONE.discard(self.url)
                return result
            except _Unreachable as exc:
                spent = time.monotonic() - start
                if not (self.patient or self.url in _REACHED):
                    raise StoreError(f"cannot {what} {self.shown}/{name}: {exc.reason}.") from None
                if spent >= self.patience or self.url in _GONE:
                    _GONE.add(self.url)  # what follows (the run log, the lease) is not waited for again
                    raise StoreError(self._gave_up(what, name, exc, spent, size)) from None
                time.sleep(min(pause, self.patience - spent))
                pause = min(2 * pause, 8.0)

    def _gave_up(self, what: str, name: str, exc: _Unreachable, spent: float, size: int | None) -> str:
        where = f"cannot {what} {self.shown}/{name}"
        if not exc.refused:
            return (
                f"{where}: {exc.reason}; the store did not answer for {spent:.0f} s: "
                "run the same command again once it is back (a solve resumes)."
            )
        if what in ("write", "publish"):
            return (
                f'{where}: the store answered "{exc.reason}" for {spent:.0f} s, as an object store out of '
                f"room does ({size or 0:,} bytes to write); free space or add volumes there and run the "
                "same command again to resume."
            )
        return (
            f'{where}: the store answered "{exc.reason}" for {spent:.0f} s; '
            "run the same command again once it is back (a solve resumes)."
        )

    @contextlib.contextmanager
    def _io(self, what: str, name: str, size: int | None = None) -> Iterator[None]:
        try:
            yield
        except StoreError:
            raise
        except FileNotFoundError as exc:
            missing = "the bucket does not exist" if "bucket" in str(exc).lower() else "it does not exist"
            raise StoreError(f"cannot {what} {self.shown}/{name}: {missing}.") from None
        except PermissionError as exc:
            raise StoreError(
                f"cannot {what} {self.shown}/{name}: access denied ({_reason(exc)}); check the credentials."
            ) from None
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                free = ""
                if self.local:
                    with contextlib.suppress(OSError):
                        free = f", {shutil.disk_usage(self.root or '.').free:,} free there"
                raise StoreError(
                    f"cannot {what} {self.shown}/{name}: the store is full "
                    f"({size or 0:,} bytes to write{free}); free space and run the same command again to resume."
                ) from None
            if _unreachable(exc):
                raise _Unreachable(_reason(exc)) from None
            if exc.errno in _SERVER_ERRNOS and not self.local:
                raise _Unreachable((exc.strerror or _reason(exc)).rstrip("."), refused=True) from None
            raise StoreError(f"cannot {what} {self.shown}/{name}: {_reason(exc)}.") from None
        except Exception as exc:  # fsspec backends raise many kinds; one sentence each
            if _unreachable(exc):
                raise _Unreachable(_reason(exc)) from None
            raise StoreError(f"cannot {what} {self.shown}/{name}: {_reason(exc)}.") from None

    def exists(self, name: str) -> bool:
        return self._call("check", name, lambda: bool(self.fs.exists(self.path(name))))

    def size(self, name: str) -> int:
        return self._call("stat", name, lambda: int(self.fs.size(self.path(name))))

    def read_bytes(self, name: str) -> bytes:
        return self._call("read", name, lambda: _counted(self.fs.cat_file(self.path(name))))

    def read_optional(self, name: str) -> bytes | None:
        """The whole file, or None when there is no such file (any other fault is one)."""

        def read() -> bytes | None:
            try:
                return _counted(self.fs.cat_file(self.path(name)))
            except FileNotFoundError:
                return None

        return self._call("read", name, read)

    def read_range(self, name: str, start: int, end: int) -> bytes:
        """Bytes start..end of a file (one ranged read: a block, a header)."""
        return self._call(
            "read", name, lambda: _counted(self.fs.cat_file(self.path(name), start=start, end=end))
        )

    def list_names(self, pattern: str) -> list[str]:
        """Names of the files beside the layers that match a glob pattern."""
        return self._call(
            "list", "", lambda: [p.rsplit("/", 1)[-1] for p in self.fs.glob(self.path(pattern))]
        )

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write `name` so that readers see the old object or the whole new one."""

        def write() -> None:
            if self.local:
                # A local file is visible while it is written: write aside, then rename.
                tmp = tmp_file(uuid.uuid4().hex)
                self.fs.makedirs(self.path(TMP), exist_ok=True)
                parent = name.rsplit("/", 1)[0] if "/" in name else ""
                self.fs.makedirs(self.path(parent) if parent else self.root or ".", exist_ok=True)
                try:
                    self.fs.pipe_file(self.path(tmp), data)
                except BaseException:
                    with contextlib.suppress(OSError):  # a half-written copy holds space for nothing
                        self.fs.rm(self.path(tmp))
                    raise
                self.fs.mv(self.path(tmp), self.path(name))
            else:
                # An object store's PUT is atomic by itself.
                self.fs.pipe_file(self.path(name), data)

        self._call("write", name, write, len(data))

    def move(self, src: str, dst: str, size: int | None = None) -> None:
        """Put `src` in place as `dst`. On an object store it is a copy (it takes
        room as a write does), so a refusal names its bytes: `size`, else asked."""
        if size is None:
            size = self.size(src)
        self._call("publish", dst, lambda: self.fs.mv(self.path(src), self.path(dst)), size)

    def remove(self, name: str) -> None:
        def remove() -> None:
            if self.fs.exists(self.path(name)):
                self.fs.rm(self.path(name), recursive=True)

        self._call("remove", name, remove)

    def ensure_root(self) -> None:
        if self.local:
            self._call("create", "", lambda: self.fs.makedirs(self.root or ".", exist_ok=True))

    # -- manifest -----------------------------------------------------------------
    def read_manifest(self) -> dict[str, Any] | None:
        if not self.exists(MANIFEST):
            return None
        raw = self.read_bytes(MANIFEST)
        try:
            manifest: dict[str, Any] = json.loads(raw)
            if manifest.get("format") != MANIFEST_FORMAT or not isinstance(manifest.get("layers"), dict):
                raise ValueError
        except (ValueError, AttributeError):
            raise StoreError(f"{self.shown}/{MANIFEST} is not a bestemshe manifest.") from None
        return manifest

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self.write_bytes(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())

    def open_manifest(self, variant: Variant, synthetic: dict[str, Any] | None = None) -> dict[str, Any]:
        """The manifest to extend: the existing one (same variant, and synthetic
        output only with the same synthetic run) or a new one. `synthetic`: the
        seed and pairs of `solve --synthetic-deps`, recorded so that such output can
        never be mixed into, or taken for, a real tablebase."""
        manifest = self.read_manifest()
        if manifest is None:
            manifest = new_manifest(variant)
            if synthetic is not None:
                manifest["synthetic"] = synthetic
            return manifest
        if manifest.get("variant") != variant.as_dict():
            raise StoreError(
                f"{self.shown} holds a tablebase of {manifest.get('variant')}, "
                f"not of {variant.as_dict()}; choose another --out."
            )
        held = manifest.get("synthetic")
        if held != synthetic:
            if synthetic is None:
                raise StoreError(
                    f"{self.shown} holds synthetic output (solve --synthetic-deps), which can "
                    "never be part of a real tablebase; choose another --out."
                )
            if held is None:
                raise StoreError(
                    f"{self.shown} holds a real tablebase, and synthetic output (solve "
                    "--synthetic-deps) may never be mixed into one; choose another --out."
                )
            raise StoreError(
                f"{self.shown} holds synthetic output of another run (seed {held.get('seed')}, "
                f"{', '.join(held.get('pairs', []))}); choose another --out."
            )
        return manifest


@dataclass(frozen=True)
class StoreJob:
    """What a worker task needs to reach a tablebase: where it is and its variant.
    Credentials travel in storage_options and stay out of repr; a solve's Job and a
    verification's VerifyJob add what their tasks need."""

    url: str
    variant: Variant
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def store(self, patient: bool = True) -> Store:
        """The store, patient by default: a task runs only after its driver reached
        it. A driver's first contact is not (patient=False): a wrong address fails
        at once."""
        return Store(self.url, self.storage_options, patient=patient)


def no_tablebase(store: Store) -> StoreError:
    """The one message every command gives for a URL that holds no tablebase."""
    return StoreError(
        f"{store.shown} holds no tablebase: no manifest.json and no layer_<k1>_<k2>_win.bin files are there."
    )


def find_tablebase(store: Store, allow_synthetic: bool = False) -> dict[str, Any] | None:
    """The tablebase's manifest, or None for a bare folder of layer files (the
    published dataset). A URL that holds neither is no_tablebase(store). Over
    http(s), which cannot list a folder, a URL without a manifest is taken as a
    bare folder, and a missing layer file says so when it is needed."""
    if store.local and not store.fs.isdir(store.root or "."):
        raise no_tablebase(store)
    manifest = store.read_manifest()
    if manifest is None and store.listable and not store.list_names(WIN_FILE_GLOB):
        raise no_tablebase(store)
    if manifest is not None and manifest.get("synthetic") is not None and not allow_synthetic:
        raise StoreError(
            f"{store.shown} holds synthetic output (solve --synthetic-deps, seed "
            f"{manifest['synthetic'].get('seed')}), not a tablebase: its values mean nothing, "
            "so it is never probed, verified or published."
        )
    return manifest


def new_manifest(variant: Variant) -> dict[str, Any]:
    return {"format": MANIFEST_FORMAT, "version": 1, "variant": variant.as_dict(), "layers": {}}


def _protocols(fs: Any) -> tuple[str, ...]:
    proto = fs.protocol
    return proto if isinstance(proto, tuple) else (proto,)


# -- checkpoints of chunked pairs -------------------------------------------------
def read_json(store: Store, name: str) -> Any:
    try:
        return json.loads(store.read_bytes(name))
    except ValueError:
        raise StoreError(f"{store.shown}/{name} is not valid JSON.") from None


def write_json(store: Store, name: str, value: Any) -> None:
    store.write_bytes(name, json.dumps(value, sort_keys=True).encode())


def completed_rounds(store: Store, pair_key: str) -> list[dict[str, Any]]:
    """The markers of a pair's complete rounds, 0, 1, ... up to the first gap."""
    markers: list[dict[str, Any]] = []
    while store.exists(round_marker(pair_key, len(markers))):
        markers.append(read_json(store, round_marker(pair_key, len(markers))))
    return markers
