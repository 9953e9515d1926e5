"""The cluster edge: makes the Dask Client, and nothing else in the code knows
which backend runs it.

- local:      a `LocalCluster` on this machine (workers, threads, memory limit,
              dashboard on 127.0.0.1 by default);
- slurm:      `dask_jobqueue.SLURMCluster`, the scheduler in this process and
              the workers as batch jobs, `scale(jobs=N)` or `adapt(...)`;
- kubernetes: `dask_kubernetes.operator.KubeCluster` from a DaskCluster spec
              built here, or an existing DaskCluster by name;
- an address: `--scheduler tcp://host:8786` (or `scheduler:` in a config).

One module a backend (local.py, slurm.py, kubernetes.py), each with a `start`;
config.py reads the settings, edge.py is what all of them do once started.
Settings come from a YAML file (`--config`, examples in configs/) and the
command line, which wins. The file's `storage:` section gives the output URL
and fsspec options (see `storage_from_config`). Credentials never live in the
file: it names environment variables, and no error repeats a value.

May import: the base modules (errors) only; the command line hands the Client it
makes to run/, verify/ and learn/.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import BestemsheError, UsageError
from .config import (
    BACKENDS,
    DEFAULT_DASHBOARD,
    SHARED_MEMORY_ENV,
    SHARED_MEMORY_WORKERS,
    choose_backend,
    load_config,
    merge_options,
    storage_from_config,
)
from .edge import dashboard_link
from .kubernetes import kubernetes_settings, kubernetes_spec
from .local import local_cluster_kwargs
from .slurm import slurm_cluster, slurm_settings

__all__ = [
    "BACKENDS",
    "DEFAULT_DASHBOARD",
    "SHARED_MEMORY_ENV",
    "SHARED_MEMORY_WORKERS",
    "choose_backend",
    "connect",
    "dashboard_link",
    "kubernetes_settings",
    "kubernetes_spec",
    "load_config",
    "local_cluster_kwargs",
    "merge_options",
    "slurm_cluster",
    "slurm_settings",
    "storage_from_config",
]


@contextlib.contextmanager
def connect(
    scheduler: str | None = None,
    workers: int | None = None,
    threads_per_worker: int | None = None,
    in_process: bool = False,
    *,
    cluster: str | None = None,
    config: str | os.PathLike[str] | dict[str, Any] | None = None,
    dashboard_address: str | None = DEFAULT_DASHBOARD,
    log: Callable[[str], object] | None = None,
    barrier_slot: bool = False,
) -> Iterator[Any]:
    """Yield a Client for the chosen backend; close what was started on exit
    (SLURM jobs are cancelled, a KubeCluster made here is deleted).

    in_process keeps local workers as threads of this process, which a memory://
    store needs (it lives in one process's memory). config is a path or a dict
    from load_config. dashboard_address: host:port for the dashboard of a
    cluster started here (a free port when taken; None or "none": no dashboard).
    log, if given, receives a line about the cluster. barrier_slot: a local
    cluster's workers get a thread for a solve's round barriers (local.py)."""
    from distributed import Client

    from . import kubernetes, local, slurm

    if config is not None and not isinstance(config, dict):
        config = load_config(config)
    backend, address = choose_backend(cluster, scheduler, config)
    say = log or (lambda line: None)
    if backend != "local" and in_process:
        raise UsageError("a memory:// store lives in one process: use the local cluster.")
    if backend == "scheduler":
        try:
            client = Client(address, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise BestemsheError(f"cannot reach the Dask scheduler at {address}: {exc}.") from None
        with client:
            yield client
        return
    # The scheduler lives in this process: keep its warnings (e.g. a busy event
    # loop while workers start, a dashboard port taken) off the user's terminal.
    logging.getLogger("distributed").setLevel(logging.ERROR)
    if backend == "local":
        started = local.start(
            config, workers, threads_per_worker, in_process, dashboard_address, say, barrier_slot
        )
    elif backend == "slurm":
        started = slurm.start(config, workers, dashboard_address, say)
    else:
        started = kubernetes.start(config, workers, say)
    with started as client:
        yield client
