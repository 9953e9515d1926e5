"""dask-kubernetes' operator: a DaskCluster made from a spec built here, or an
existing one by name."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import BestemsheError, UsageError
from .config import (
    DEFAULT_WAIT_SECONDS,
    SHARED_MEMORY_ENV,
    Scaling,
    path_of,
    positive,
    scaling_of,
    secret_keys,
    wait_seconds,
)
from .edge import apply_scaling, say_dashboard, wait_for_workers


def kubernetes_settings(
    config: dict[str, Any] | None = None, workers: int | None = None
) -> tuple[dict[str, Any] | None, dict[str, Any], Scaling, float]:
    """(DaskCluster spec or None, KubeCluster kwargs, scaling, wait seconds) from
    the `kubernetes:` section. With `existing: NAME` the spec is None and the
    running DaskCluster NAME is used."""
    section = dict((config or {}).get("kubernetes", {}))
    path = path_of(config)
    namespace = section.get("namespace")
    wait = wait_seconds(section.get("wait_timeout", DEFAULT_WAIT_SECONDS), "kubernetes", path)
    adapt = section.get("adapt")
    replicas = positive(section.get("workers", 1), "kubernetes.workers", path)
    scaling: Scaling
    if workers is None and adapt is None:
        scaling = ("workers", replicas)
    else:
        scaling = scaling_of(workers, adapt, "kubernetes", "workers", "workers", path)
    kwargs: dict[str, Any] = {"namespace": namespace} if namespace else {}
    if section.get("existing"):
        if workers is None and adapt is None:
            scaling = ("keep", 1)  # leave a running cluster's size alone
        return None, dict(kwargs, name=str(section["existing"])), scaling, wait
    spec = kubernetes_spec(section, replicas if scaling[0] != "workers" else scaling[1], path)
    kwargs["shutdown_on_close"] = bool(section.get("shutdown_on_close", True))
    return spec, kwargs, scaling, wait


def kubernetes_spec(section: dict[str, Any], replicas: int, path: str = "the config") -> dict[str, Any]:
    """A DaskCluster resource (kubernetes.dask.org/v1) for the operator: scheduler
    and workers from `image`, worker `resources`, plain `env`, and every key of the
    Secret `env-from-secret` as environment variables (the S3 credentials)."""
    try:
        from dask_kubernetes.operator import make_cluster_spec
    except ImportError:
        raise UsageError(
            "--cluster kubernetes needs dask-kubernetes (pip install 'bestemshe_dist[kubernetes]')."
        ) from None
    image = section.get("image")
    if not image:
        raise UsageError(
            f"the section kubernetes in {path} needs image: the bestemshe-dist image "
            "(deploy/docker/Dockerfile)."
        )
    env = section.get("env") or {}
    if not isinstance(env, dict):
        raise UsageError(f"kubernetes.env in {path} must be a mapping of names to values.")
    for name in secret_keys(env):
        raise UsageError(
            f"kubernetes.env in {path} holds a credential ({name}): put it in a Secret "
            "and name it with env-from-secret."
        )
    resources = section.get("resources") or {}
    if not isinstance(resources, dict) or set(resources) - {"requests", "limits"}:
        raise UsageError(f"kubernetes.resources in {path} takes requests and limits.")
    threads = positive(section.get("threads_per_worker", 1), "kubernetes.threads-per-worker", path)
    spec = make_cluster_spec(
        name=str(section.get("name") or "bestemshe"),
        image=str(image),
        n_workers=replicas,
        resources=resources,
        env={**SHARED_MEMORY_ENV, **{str(k): str(v) for k, v in env.items()}},
        scheduler_service_type=str(section.get("scheduler_service_type", "ClusterIP")),
        idle_timeout=int(section.get("idle_timeout", 0)),
    )
    worker = spec["spec"]["worker"]["spec"]["containers"][0]
    scheduler = spec["spec"]["scheduler"]["spec"]["containers"][0]
    # The image has distributed's `dask` command (the old dask-worker scripts are gone).
    worker["args"] = [
        "dask",
        "worker",
        "--name",
        "$(DASK_WORKER_NAME)",
        "--nthreads",
        str(threads),
        "--dashboard",
        "--dashboard-address",
        "8788",
        *map(str, section.get("worker_extra_args") or []),
    ]
    scheduler["args"] = ["dask", "scheduler", "--host", "0.0.0.0"]
    scheduler["resources"] = {}
    secret = section.get("env_from_secret")
    for container in (worker, scheduler):
        if not container.get("env"):
            container.pop("env", None)
        if secret:
            container["envFrom"] = [{"secretRef": {"name": str(secret)}}]
    return spec


def forget_failed_kube_clusters(kind: Any) -> None:
    """A KubeCluster whose start failed stays registered, and dask-kubernetes' exit
    hook then tries to delete it and prints a traceback: delete what can be
    deleted now, quietly, and unregister the rest."""
    for made in list(getattr(kind, "_instances", ())):
        if getattr(made, "status", None) is not None and made.status.name == "running":
            continue
        with contextlib.suppress(Exception):
            made.close(timeout=10)
        made.shutdown_on_close = False


@contextlib.contextmanager
def start(config: dict[str, Any] | None, workers: int | None, say: Callable[[str], object]) -> Iterator[Any]:
    """A KubeCluster (made here, or an existing one) and its Client; one made here is deleted on exit."""
    from distributed import Client

    spec, kwargs, scaling, wait = kubernetes_settings(config, workers)
    try:
        from dask_kubernetes.operator import KubeCluster
    except ImportError:
        raise UsageError(
            "--cluster kubernetes needs dask-kubernetes (pip install 'bestemshe_dist[kubernetes]')."
        ) from None
    # kwargs names the cluster exactly when there is no spec (an existing cluster)
    name = kwargs["name"] if spec is None else spec["metadata"]["name"]
    where = f"{name} in namespace {kwargs.get('namespace', 'default')}"
    try:
        made = (
            KubeCluster.from_name(kwargs.pop("name"), **kwargs)
            if spec is None
            else KubeCluster(custom_cluster_spec=spec, quiet=True, **kwargs)
        )
    except Exception as exc:  # kr8s/kubernetes raise many kinds; one sentence for all
        forget_failed_kube_clusters(KubeCluster)
        raise BestemsheError(
            f"cannot start the Kubernetes Dask cluster {where}: "
            f"{str(exc).splitlines()[0].rstrip('.') if str(exc) else type(exc).__name__}."
        ) from None
    with made, Client(made) as client:
        expected = apply_scaling(made, scaling)
        say_dashboard(say, "kubernetes", made, where)
        wait_for_workers(client, expected, wait, "Kubernetes", "check kubectl get pods and their logs")
        yield client
