"""One solve at a time per output: a lease object beside the layers.

The driver takes the lease before it writes anything and renews it while it
runs; a second run pointed at the same output refuses to start while the lease
is alive. A lease left by a killed driver is taken over once it is stale: at
once when its process is gone from this host, otherwise after STALE_SECONDS.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from typing import Any

from ..errors import StoreError
from ..naming import LEASE
from .store import Store

RENEW_SECONDS = 5.0
STALE_SECONDS = 30.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_reason(holder: dict[str, Any], now: float | None = None, host: str | None = None) -> str | None:
    """Why a lease record no longer holds (its process is gone from this host, or
    it was not renewed in time), or None while its solve may still be running."""
    host = socket.gethostname() if host is None else host
    try:
        pid, renewed = int(holder.get("pid", -1)), float(holder.get("renewed", 0))
    except (TypeError, ValueError):
        return "its record is unreadable"
    if holder.get("host") == host and not _alive(pid):
        return f"process {pid} on this host is gone"
    age = (time.time() if now is None else now) - renewed
    if age > STALE_SECONDS:
        return f"it was last renewed {age:.0f}s ago (a live solve renews it every {RENEW_SECONDS:.0f}s)"
    return None


class Lease:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.token = uuid.uuid4().hex
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _record(self) -> dict[str, Any]:
        return {"token": self.token, "host": self.host, "pid": self.pid, "renewed": time.time()}

    def _holder(self) -> dict[str, Any] | None:
        if not self.store.exists(LEASE):
            return None
        try:
            holder: dict[str, Any] | None = json.loads(self.store.read_bytes(LEASE))
        except ValueError:
            return None
        return holder

    def _stale(self, holder: dict[str, Any]) -> bool:
        return stale_reason(holder, host=self.host) is not None

    def acquire(self) -> None:
        holder = self._holder()
        if holder and holder.get("token") != self.token and not self._stale(holder):
            raise StoreError(
                f"another solve (pid {holder.get('pid')} on {holder.get('host')}) is writing to "
                f"{self.store.shown}; wait for it to finish or choose another --out."
            )
        self.store.write_bytes(LEASE, json.dumps(self._record()).encode())
        # Two runs that started together both wrote; the last write wins, the other leaves.
        time.sleep(0.2)
        holder = self._holder()
        if not holder or holder.get("token") != self.token:
            raise StoreError(f"another solve took the lease on {self.store.shown} at the same time.")
        self._thread = threading.Thread(target=self._renew, name="bestemshe-lease", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(RENEW_SECONDS):
            try:
                self.store.write_bytes(LEASE, json.dumps(self._record()).encode())
            except StoreError:
                pass  # a missed renewal only shortens the lease; the next one retries

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        holder = self._holder()
        if holder and holder.get("token") == self.token:
            self.store.remove(LEASE)

    def __enter__(self) -> Lease:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
