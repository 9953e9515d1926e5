"""A LocalCluster on this machine."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

import dask

from ..errors import UsageError
from ..naming import SLOTS
from .config import DEFAULT_DASHBOARD, NO_DASHBOARD_HTTP, SHARED_MEMORY_WORKERS, dashboard_of
from .edge import port_taken_is_fine, say_dashboard


def local_cluster_kwargs(
    config: dict[str, Any] | None = None,
    workers: int | None = None,
    threads_per_worker: int | None = None,
    in_process: bool = False,
    dashboard_address: str | None = DEFAULT_DASHBOARD,
    barrier_slot: bool = False,
) -> dict[str, Any]:
    """The LocalCluster keyword arguments: the command line, then `local:`, then
    defaults. barrier_slot (a solve): each worker gets a thread more than its
    SLOTS resource, which the solve's regular tasks take one each of, so a task
    a round waits on never queues behind a running one."""
    section = (config or {}).get("local", {})
    workers = workers if workers is not None else section.get("workers")
    threads = threads_per_worker if threads_per_worker is not None else section.get("threads_per_worker")
    if (workers is not None and (not isinstance(workers, int) or workers < 1)) or (
        threads is not None and (not isinstance(threads, int) or threads < 1)
    ):
        raise UsageError("--workers and --threads-per-worker must be at least 1.")
    # By default one worker process with a thread per core: the kernels release
    # the GIL, and the host memory is then private, in 2 MiB pages (hostmem.py).
    # Pair 8-12's rounds through the CLI on 2 cores: 152.3 s with two processes;
    # with one process of two threads 132.7 and 147.7 s on files in /dev/shm,
    # 124.4 and 145.2 s private (runs interleaved; this machine varies by 10%).
    kwargs: dict[str, Any] = dict(
        n_workers=workers or 1,
        threads_per_worker=threads or (1 if workers else os.cpu_count() or 1),
        processes=not in_process,
        dashboard_address=dashboard_of(dashboard_address, section),
        silence_logs=logging.ERROR,
    )
    if barrier_slot:
        # Without it, pair 12-12's round 0 (31 s of kernel in all its 85 rounds) took
        # 126 s in the --min-captured 22 solve, behind small pairs' solves and
        # level-19 publication running in both threads.
        kwargs["resources"] = {SLOTS: kwargs["threads_per_worker"]}
        kwargs["threads_per_worker"] += 1
    if not in_process:
        # Worker processes ignore Ctrl-C (the driver stops them) and log to the solve's log file.
        kwargs["preload"] = ["bestemshe_dist.watch.logs"]
    if kwargs["dashboard_address"] is None:
        # No dashboard; the scheduler's small HTTP server (/health) stays on loopback.
        kwargs["scheduler_kwargs"] = {"dashboard_address": NO_DASHBOARD_HTTP}
    if section.get("memory_limit") is not None:
        kwargs["memory_limit"] = section["memory_limit"]
    return kwargs


@contextlib.contextmanager
def start(
    config: dict[str, Any] | None,
    workers: int | None,
    threads_per_worker: int | None,
    in_process: bool,
    dashboard_address: str | None,
    say: Callable[[str], object],
    barrier_slot: bool = False,
) -> Iterator[Any]:
    """A LocalCluster and its Client, closed on exit."""
    from distributed import Client, LocalCluster

    kwargs = local_cluster_kwargs(
        config, workers, threads_per_worker, in_process, dashboard_address, barrier_slot
    )
    with port_taken_is_fine(), dask.config.set(SHARED_MEMORY_WORKERS):
        local = LocalCluster(**kwargs)
    with local, Client(local) as client:
        say_dashboard(say, "local", local)
        yield client
