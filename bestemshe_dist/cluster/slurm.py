"""dask-jobqueue's SLURMCluster: the scheduler in this process, workers as batch jobs."""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import BestemsheError, UsageError
from ..naming import counted
from .config import (
    DEFAULT_DASHBOARD,
    DEFAULT_WAIT_SECONDS,
    NO_DASHBOARD_HTTP,
    SHARED_MEMORY_ENV,
    Scaling,
    dashboard_of,
    path_of,
    positive,
    scaling_of,
    wait_seconds,
)
from .edge import apply_scaling, port_taken_is_fine, replacing_lost_jobs, say_dashboard, wait_for_workers


def slurm_settings(
    config: dict[str, Any] | None = None,
    workers: int | None = None,
    dashboard_address: str | None = DEFAULT_DASHBOARD,
) -> tuple[dict[str, Any], Scaling, float]:
    """(SLURMCluster kwargs, scaling, wait seconds) from the `slurm:` section.

    scaling is ("jobs", N) or ("adapt", {"minimum": a, "maximum": b}); `--workers N`
    means N worker jobs. The workers run this very Python (`python:` overrides it),
    so they import bestemshe_dist from the same environment."""
    import dask

    section = dict((config or {}).get("slurm", {}))
    path = path_of(config)
    scale = section.pop("scale", None)
    adapt = section.pop("adapt", None)
    wait = section.pop("wait_timeout", DEFAULT_WAIT_SECONDS)
    if scale is not None and adapt is not None:
        raise UsageError(f"the section slurm in {path} has both scale and adapt: keep one.")
    kwargs: dict[str, Any] = {"python": sys.executable}
    # Keep the user's own jobqueue.yaml defaults; fill in only what is missing everywhere.
    for key, default in (("cores", 1), ("memory", "2GiB"), ("processes", 1)):
        if dask.config.get(f"jobqueue.slurm.{key}", default=None) is None:
            kwargs[key] = default
    kwargs.update(section)
    # The worker jobs keep Dask's per-process memory rules off (see SHARED_MEMORY_WORKERS).
    kwargs["job_script_prologue"] = [f"export {k}={v}" for k, v in SHARED_MEMORY_ENV.items()] + list(
        kwargs.get("job_script_prologue") or []
    )
    options: dict[str, Any] = dict(kwargs.get("scheduler_options") or {})
    if "dashboard_address" not in options and "dashboard" not in options:
        address = dashboard_of(dashboard_address, section)
        options["dashboard"] = address is not None
        options["dashboard_address"] = address or NO_DASHBOARD_HTTP
    kwargs["scheduler_options"] = options
    scaling: Scaling
    if workers is None and adapt is None:
        jobs = scale.get("jobs", 1) if isinstance(scale, dict) else (scale if scale is not None else 1)
        scaling = ("jobs", positive(jobs, "slurm.scale.jobs", path))
    else:
        scaling = scaling_of(workers, adapt, "slurm", "jobs", "worker jobs", path)
    return kwargs, scaling, wait_seconds(wait, "slurm", path)


def slurm_cluster(
    config: dict[str, Any] | None = None,
    workers: int | None = None,
    dashboard_address: str | None = DEFAULT_DASHBOARD,
) -> tuple[Any, Scaling, float]:
    """Build (not scale) the SLURMCluster; returns (cluster, scaling, wait seconds).
    Building starts only the scheduler, in this process: no SLURM is needed until
    the cluster is scaled (`cluster.job_script()` shows the batch script)."""
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise UsageError("--cluster slurm needs dask-jobqueue (pip install dask-jobqueue).") from None
    kwargs, scaling, wait = slurm_settings(config, workers, dashboard_address)
    try:
        with port_taken_is_fine():
            cluster = SLURMCluster(**kwargs)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"the section slurm in {path_of(config)} is not accepted by dask-jobqueue: "
            f"{str(exc).splitlines()[0].rstrip('.')}."
        ) from None
    except RuntimeError as exc:  # "Cluster failed to start: <reason>"
        reason = str(exc).removeprefix("Cluster failed to start:").strip().splitlines()[0].rstrip(".")
        raise BestemsheError(f"cannot start the Dask scheduler for SLURM: {reason}.") from None
    return cluster, scaling, wait


@contextlib.contextmanager
def start(
    config: dict[str, Any] | None,
    workers: int | None,
    dashboard_address: str | None,
    say: Callable[[str], object],
) -> Iterator[Any]:
    """A SLURMCluster scaled to its jobs, and its Client; the jobs are cancelled on exit."""
    import logging

    from distributed import Client

    logging.getLogger("dask_jobqueue").setLevel(logging.ERROR)
    slurm_settings(config, workers, dashboard_address)  # a bad config first, as one sentence
    if not shutil.which("sbatch"):
        raise BestemsheError(
            "sbatch is not on the PATH: --cluster slurm runs where SLURM jobs can be "
            "submitted (a login or compute node)."
        )
    made, scaling, wait = slurm_cluster(config, workers, dashboard_address)
    with made, Client(made) as client:
        processes = getattr(getattr(made, "_dummy_job", None), "worker_processes", None)
        expected = apply_scaling(made, scaling, int(processes or 1))
        say_dashboard(
            say,
            "slurm",
            made,
            counted(scaling[1], "worker job")
            if scaling[0] == "jobs"
            else f"adaptive {scaling[1]['minimum']}..{scaling[1]['maximum']} worker jobs",
        )
        wait_for_workers(client, expected, wait, "SLURM", "check squeue and the worker job logs")
        with replacing_lost_jobs(made, scaling, say):
            yield client
