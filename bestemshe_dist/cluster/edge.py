"""What every backend does once its cluster is made: scale it, wait for the
workers, say where the dashboard is."""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import BestemsheError
from ..naming import counted
from .config import Scaling


@contextlib.contextmanager
def port_taken_is_fine() -> Iterator[None]:
    """The dashboard moves to a free port when its own is taken (and the start
    line says where): no warning for that."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
        yield


def apply_scaling(cluster: Any, scaling: Scaling, processes: int | None = None) -> int:
    """Apply the scaling: batch jobs of `processes` workers each (SLURM), or
    workers (processes None); returns how many workers to wait for before solving."""
    kind, value = scaling
    if kind == "adapt":
        if processes is not None:  # dask-jobqueue adapts in jobs
            cluster.adapt(minimum_jobs=value["minimum"], maximum_jobs=value["maximum"])
            return value["minimum"] * processes
        cluster.adapt(minimum=value["minimum"], maximum=value["maximum"])
        return value["minimum"]
    if kind == "jobs":
        cluster.scale(jobs=value)
        return value * processes
    if kind == "keep":
        return value
    cluster.scale(value)
    return value


# How often a fixed number of batch jobs is looked at for jobs that ended.
JOB_WATCH_SECONDS = 5.0


@contextlib.contextmanager
def replacing_lost_jobs(cluster: Any, scaling: Scaling, say: Callable[[str], object]) -> Iterator[None]:
    """Keep a fixed number of batch jobs: dask-jobqueue never submits a job again
    when one ends (scancel, a node lost, a walltime), so the solve would go on with
    fewer workers until it ran on none. A job whose worker left the scheduler is
    dropped from the cluster's jobs after `distributed.deploy.lost-worker-timeout`
    (15 s); then scaling to the same number submits it again."""
    if scaling[0] != "jobs":  # adapt has its own policy
        yield
        return
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(JOB_WATCH_SECONDS):
            try:
                lost = sorted(set(cluster.worker_spec) - set(cluster.workers), key=str)
                if lost:
                    say(f"worker job {', '.join(map(str, lost))} ended; submitting it again")
                    cluster.scale(jobs=scaling[1])
            except Exception:  # the cluster closing under us: nothing to keep
                return

    thread = threading.Thread(target=watch, name="bestemshe-jobs", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def wait_for_workers(client: Any, expected: int, seconds: float, where: str, hint: str) -> None:
    if expected <= 0:
        return
    try:
        client.wait_for_workers(n_workers=expected, timeout=seconds)
    except TimeoutError:
        try:
            have = len(client.nthreads())
        except Exception:
            have = 0
        raise BestemsheError(
            f"only {have} of {counted(expected, 'Dask worker')} joined on {where} "
            f"within {seconds:g} s: {hint}."
        ) from None


def dashboard_link(cluster: Any) -> str | None:
    """The dashboard's URL, on the host it listens on (Dask's own link names this
    host's address even when the dashboard only listens on 127.0.0.1); None
    without a dashboard."""
    if not _has_dashboard(cluster):
        return None
    link = getattr(cluster, "dashboard_link", None)
    server = getattr(getattr(cluster, "scheduler", None), "http_server", None)
    if server is not None:
        from distributed.utils import format_dashboard_link

        names = [sock.getsockname()[:2] for sock in getattr(server, "_sockets", {}).values()]
        if names and {host for host, _ in names} <= {"127.0.0.1", "::1"}:
            return format_dashboard_link("127.0.0.1", names[0][1])
    return link


def say_dashboard(
    say: Callable[[str], object], backend: str, cluster: Any, detail: str | None = None
) -> None:
    link = dashboard_link(cluster)
    parts = [f"{backend} cluster"] + ([detail] if detail else []) + ([f"dashboard {link}"] if link else [])
    say(", ".join(parts))


def _has_dashboard(cluster: Any) -> bool:
    """Whether the scheduler serves the Bokeh dashboard (its HTTP server always runs)."""
    scheduler = getattr(cluster, "scheduler", None)
    application = getattr(scheduler, "http_application", None)
    if application is None:
        return True  # a remote scheduler (Kubernetes): the operator runs it with a dashboard
    return bool(getattr(application, "applications", None))  # the Bokeh apps, when served
