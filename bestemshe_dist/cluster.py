"""Makes the Dask Client: a local cluster on this machine, or an existing scheduler.
Nothing else in the code knows which."""
from __future__ import annotations

import contextlib
import logging
import os

from .errors import BestemsheError, UsageError


@contextlib.contextmanager
def connect(scheduler: str | None = None, workers: int | None = None,
            threads_per_worker: int = 1, in_process: bool = False):
    """Yield a Client. in_process keeps workers as threads of this process, which a
    memory:// store needs (it lives in one process's memory)."""
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise BestemsheError(f"cannot reach the Dask scheduler at {scheduler}: {exc}.") from None
        with client:
            yield client
        return
    # The scheduler lives in this process: keep its warnings (e.g. a busy event
    # loop while workers start) off the user's terminal; errors still show.
    logging.getLogger("distributed").setLevel(logging.ERROR)
    workers = workers or os.cpu_count() or 1
    if workers < 1 or threads_per_worker < 1:
        raise UsageError("--workers and --threads-per-worker must be at least 1.")
    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=threads_per_worker,
        processes=not in_process,
        dashboard_address="127.0.0.1:0",  # a free port: no clash with another cluster
        silence_logs=logging.ERROR,
    )
    with cluster, Client(cluster) as client:
        yield client
