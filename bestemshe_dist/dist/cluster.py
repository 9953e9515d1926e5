"""The cluster edge: makes the Dask Client, and nothing else in the code knows
which backend runs it.

- local:      a `LocalCluster` on this machine (workers, threads, memory limit,
              dashboard on 127.0.0.1 by default);
- slurm:      `dask_jobqueue.SLURMCluster`, the scheduler in this process and
              the workers as batch jobs, `scale(jobs=N)` or `adapt(...)`;
- kubernetes: `dask_kubernetes.operator.KubeCluster` from a DaskCluster spec
              built here, or an existing DaskCluster by name;
- an address: `--scheduler tcp://host:8786` (or `scheduler:` in a config).

Settings come from a YAML file (`--config`, examples in configs/) and the
command line, which wins. The file's `storage:` section gives the output URL
and fsspec options (see `storage_from_config`). Credentials never live in the
file: it names environment variables, and no error repeats a value.
"""
from __future__ import annotations

import contextlib
import copy
import logging
import os
import shutil
import sys
import warnings
from pathlib import Path

import dask

from ..errors import BestemsheError, UsageError

BACKENDS = ("local", "slurm", "kubernetes")
DEFAULT_DASHBOARD = "127.0.0.1:8787"
# A large pair's arrays live once per host in shared memory (hostmem.py) and
# count in the RSS of every worker process that maps them, so Dask's own
# per-process memory rules (spill, pause at 80%, kill at 95% of the process's
# limit) would misread a host holding them once as each process holding them
# all. The solve budgets memory per host itself (memory.py, the driver's
# admission), so the workers it starts turn Dask's off. Workers started
# elsewhere (SLURM, Kubernetes) get the same through DASK_DISTRIBUTED__WORKER__
# MEMORY__* variables (configs/, deploy/).
SHARED_MEMORY_WORKERS = {"distributed.worker.memory.target": False, "distributed.worker.memory.spill": False,
                         "distributed.worker.memory.pause": False, "distributed.worker.memory.terminate": False}
SHARED_MEMORY_ENV = {"DASK_" + key.upper().replace(".", "__").replace("-", "_"): "False"
                     for key in SHARED_MEMORY_WORKERS}
DEFAULT_WAIT_SECONDS = 600
_NO_DASHBOARD_HTTP = "127.0.0.1:0"  # without a dashboard, the scheduler's /health server

_TOP_KEYS = {"cluster", "scheduler", "storage", *BACKENDS}
_LOCAL_KEYS = {"workers", "threads_per_worker", "memory_limit", "dashboard_address"}
# Ours, besides the SLURMCluster keyword arguments (jobqueue.yaml's keys).
_SLURM_OWN = {"scale", "adapt", "wait_timeout"}
_KUBE_KEYS = {"name", "namespace", "image", "workers", "threads_per_worker", "resources", "env",
              "env_from_secret", "worker_extra_args", "existing", "adapt", "wait_timeout",
              "scheduler_service_type", "idle_timeout", "shutdown_on_close"}
_STORAGE_KEYS = {"url", "endpoint", "key_env", "secret_env", "token_env", "options"}
# Option or variable names that hold a credential (lower case): these exact names,
# and any name containing one of the words.
_SECRET_NAMES = {"key", "access_key", "aws_access_key_id", "access_key_id", "session_token"}
_SECRET_WORDS = ("secret", "token", "password", "passwd", "credential")


def _norm(section: dict) -> dict:
    """jobqueue.yaml writes `job-extra-directives`; Python writes underscores."""
    return {str(k).replace("-", "_"): v for k, v in section.items()}


def load_config(path) -> dict:
    """Read and check a cluster config (YAML). Returns the normalised dict:
    top-level keys as written, each section's keys with underscores."""
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read the config {path}: {exc.strerror or exc}.") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise UsageError(f"the config {path} is not valid YAML{line}.") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise UsageError(f"the config {path} must be a YAML mapping (cluster:, slurm:, storage:, ...).")
    unknown = sorted(set(map(str, raw)) - _TOP_KEYS)
    if unknown:
        raise UsageError(f"the config {path} has an unknown section {unknown[0]!r} "
                         f"(known: {', '.join(sorted(_TOP_KEYS))}).")
    config = {"_path": str(path)}
    for key, value in raw.items():
        if key in ("cluster", "scheduler"):
            if value is not None and not isinstance(value, str):
                raise UsageError(f"{key} in the config {path} must be a string.")
            config[key] = value
            continue
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise UsageError(f"the section {key} in the config {path} must be a mapping.")
        config[key] = _norm(value)
    if config.get("cluster") is not None and config["cluster"] not in BACKENDS:
        raise UsageError(f"cluster in the config {path} must be one of {', '.join(BACKENDS)}.")
    _check_keys(config, "local", _LOCAL_KEYS)
    _check_keys(config, "slurm", _slurm_keys() | _SLURM_OWN)
    _check_keys(config, "kubernetes", _KUBE_KEYS)
    _check_keys(config, "storage", _STORAGE_KEYS)
    return config


def _check_keys(config, section, allowed):
    unknown = sorted(set(config.get(section, {})) - allowed)
    if unknown:
        raise UsageError(f"the section {section} in the config {config['_path']} has an unknown key "
                         f"{unknown[0].replace('_', '-')!r}.")


def _slurm_keys() -> set:
    """The keys dask-jobqueue's SLURMCluster takes (its jobqueue.yaml section)."""
    import dask

    try:
        import dask_jobqueue  # noqa: F401  (registers the jobqueue config defaults)
    except ImportError:
        pass
    keys = {k.replace("-", "_") for k in (dask.config.get("jobqueue.slurm", default={}) or {})}
    return keys | {"cores", "memory", "processes", "python", "interface", "queue", "account",
                   "walltime", "job_extra_directives", "worker_extra_args", "job_script_prologue",
                   "log_directory", "local_directory", "scheduler_options", "job_cpu", "job_mem",
                   "death_timeout", "name", "shebang", "nanny", "protocol", "security",
                   "job_directives_skip", "worker_command", "host", "port"}


def _path_of(config) -> str:
    return (config or {}).get("_path", "the config")


# --------------------------------------------------------------------- storage

def storage_from_config(config: dict | None) -> tuple[str | None, dict]:
    """The output URL and fsspec storage options of a config's `storage:` section.

    `endpoint` becomes `client_kwargs.endpoint_url`; `options` is passed as is;
    `key-env` / `secret-env` / `token-env` name environment variables whose values
    become `key` / `secret` / `token` (without them s3fs reads the usual AWS_*
    variables itself). A credential written in the file is refused."""
    section = dict((config or {}).get("storage", {}))
    path = _path_of(config)
    options = section.get("options") or {}
    if not isinstance(options, dict):
        raise UsageError(f"storage.options in {path} must be a mapping.")
    options = copy.deepcopy(options)
    for name in _secret_keys(options):
        raise UsageError(f"storage.options in {path} holds a credential ({name}): name an environment "
                         "variable with key-env / secret-env instead.")
    if section.get("endpoint"):
        options.setdefault("client_kwargs", {})["endpoint_url"] = str(section["endpoint"])
    for option in ("key", "secret", "token"):
        variable = section.get(f"{option}_env")
        if variable:
            if str(variable) not in os.environ:
                raise UsageError(f"the environment variable {variable} named by storage.{option}-env in "
                                 f"{path} is not set.")
            options[option] = os.environ[str(variable)]
    url = section.get("url")
    return (str(url) if url else None), options


def _secret_keys(value, prefix=""):
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{prefix}{key}"
            lowered = str(key).lower()
            if isinstance(item, (str, bytes)) and not lowered.endswith(("_env", "_url", "_file")) \
                    and (lowered in _SECRET_NAMES or any(w in lowered for w in _SECRET_WORDS)):
                yield name
            yield from _secret_keys(item, name + ".")


def merge_options(base: dict, override: dict) -> dict:
    """Deep merge of storage options: `override` (the command line) wins."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_options(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


# --------------------------------------------------------------------- backends

def choose_backend(cluster: str | None, scheduler: str | None, config: dict | None) -> tuple[str, str | None]:
    """('scheduler', address) or (backend, None): the command line first, then the config."""
    config = config or {}
    if cluster is not None and cluster not in BACKENDS:
        raise UsageError(f"--cluster must be one of {', '.join(BACKENDS)}.")
    if scheduler and cluster and cluster != "local":
        raise UsageError("give either --scheduler or --cluster, not both.")
    if scheduler:
        return "scheduler", scheduler
    if cluster:
        return cluster, None
    if config.get("scheduler"):
        return "scheduler", config["scheduler"]
    return config.get("cluster") or "local", None


def _scaling(workers, adapt, backend: str, unit: str, unit_words: str, path) -> tuple:
    """("jobs"/"workers", N) from --workers, else ("adapt", {minimum, maximum}) from
    the config's `adapt` section."""
    if workers is not None:
        return unit, _positive(workers, "--workers", "the command line")
    if not isinstance(adapt, dict) or set(adapt) - {"minimum", "maximum"}:
        raise UsageError(f"{backend}.adapt in {path} takes minimum and maximum ({unit_words}).")
    return "adapt", {"minimum": _positive(adapt.get("minimum", 1), f"{backend}.adapt.minimum", path),
                     "maximum": _positive(adapt.get("maximum", 1), f"{backend}.adapt.maximum", path)}


def _positive(value, what, path):
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{what} in {path} must be a whole number.") from None
    if number < 1 or number != value:
        raise UsageError(f"{what} in {path} must be a whole number of at least 1.")
    return number


def _dashboard(parameter, section):
    """The command line's dashboard address wins; else the config's; else the default.
    None or "none" turns the dashboard off."""
    value = parameter
    if parameter == DEFAULT_DASHBOARD and "dashboard_address" in section:
        value = section["dashboard_address"]
    if value is None or str(value).strip().lower() in ("none", ""):
        return None
    return str(value)


def local_cluster_kwargs(config=None, workers=None, threads_per_worker=None, in_process=False,
                         dashboard_address=DEFAULT_DASHBOARD) -> dict:
    """The LocalCluster keyword arguments: the command line, then `local:`, then defaults."""
    section = (config or {}).get("local", {})
    workers = workers if workers is not None else section.get("workers")
    threads = threads_per_worker if threads_per_worker is not None else section.get("threads_per_worker")
    if workers is not None and (not isinstance(workers, int) or workers < 1) \
            or threads is not None and (not isinstance(threads, int) or threads < 1):
        raise UsageError("--workers and --threads-per-worker must be at least 1.")
    # By default one worker process with a thread per core: the kernels release
    # the GIL, and the host memory is then private, in 2 MiB pages (hostmem.py).
    # Pair 8-12's rounds through the CLI on 2 cores: 152.3 s with two processes;
    # with one process of two threads 132.7 and 147.7 s on files in /dev/shm,
    # 124.4 and 145.2 s private (runs interleaved; this machine varies by 10%).
    kwargs = dict(
        n_workers=workers or 1,
        threads_per_worker=threads or (1 if workers else os.cpu_count() or 1),
        processes=not in_process,
        dashboard_address=_dashboard(dashboard_address, section),
        silence_logs=logging.ERROR,
    )
    if not in_process:
        # Worker processes ignore Ctrl-C (the driver stops them) and log to the solve's log file.
        kwargs["preload"] = ["bestemshe_dist.dist.logs"]
    if kwargs["dashboard_address"] is None:
        # No dashboard; the scheduler's small HTTP server (/health) stays on loopback.
        kwargs["scheduler_kwargs"] = {"dashboard_address": _NO_DASHBOARD_HTTP}
    if section.get("memory_limit") is not None:
        kwargs["memory_limit"] = section["memory_limit"]
    return kwargs


def slurm_settings(config=None, workers=None, dashboard_address=DEFAULT_DASHBOARD):
    """(SLURMCluster kwargs, scaling, wait seconds) from the `slurm:` section.

    scaling is ("jobs", N) or ("adapt", {"minimum": a, "maximum": b}); `--workers N`
    means N worker jobs. The workers run this very Python (`python:` overrides it),
    so they import bestemshe_dist from the same environment."""
    import dask

    section = dict((config or {}).get("slurm", {}))
    path = _path_of(config)
    scale = section.pop("scale", None)
    adapt = section.pop("adapt", None)
    wait = section.pop("wait_timeout", DEFAULT_WAIT_SECONDS)
    if scale is not None and adapt is not None:
        raise UsageError(f"the section slurm in {path} has both scale and adapt: keep one.")
    kwargs = {"python": sys.executable}
    # Keep the user's own jobqueue.yaml defaults; fill in only what is missing everywhere.
    for key, default in (("cores", 1), ("memory", "2GiB"), ("processes", 1)):
        if dask.config.get(f"jobqueue.slurm.{key}", default=None) is None:
            kwargs[key] = default
    kwargs.update(section)
    # The worker jobs keep Dask's per-process memory rules off (see SHARED_MEMORY_WORKERS).
    kwargs["job_script_prologue"] = ([f"export {k}={v}" for k, v in SHARED_MEMORY_ENV.items()]
                                     + list(kwargs.get("job_script_prologue") or []))
    options = dict(kwargs.get("scheduler_options") or {})
    if "dashboard_address" not in options and "dashboard" not in options:
        address = _dashboard(dashboard_address, section)
        options["dashboard"] = address is not None
        options["dashboard_address"] = address or _NO_DASHBOARD_HTTP
    kwargs["scheduler_options"] = options
    if workers is None and adapt is None:
        jobs = scale.get("jobs", 1) if isinstance(scale, dict) else (scale if scale is not None else 1)
        scaling = ("jobs", _positive(jobs, "slurm.scale.jobs", path))
    else:
        scaling = _scaling(workers, adapt, "slurm", "jobs", "worker jobs", path)
    return kwargs, scaling, _wait_seconds(wait, "slurm", path)


def _wait_seconds(value, section, path):
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{section}.wait-timeout in {path} must be a number of seconds.") from None
    if seconds <= 0:
        raise UsageError(f"{section}.wait-timeout in {path} must be positive.")
    return seconds


def slurm_cluster(config=None, workers=None, dashboard_address=DEFAULT_DASHBOARD):
    """Build (not scale) the SLURMCluster; returns (cluster, scaling, wait seconds).
    Building starts only the scheduler, in this process: no SLURM is needed until
    the cluster is scaled (`cluster.job_script()` shows the batch script)."""
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise UsageError("--cluster slurm needs dask-jobqueue (pip install dask-jobqueue).") from None
    kwargs, scaling, wait = slurm_settings(config, workers, dashboard_address)
    try:
        with _port_taken_is_fine():
            cluster = SLURMCluster(**kwargs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"the section slurm in {_path_of(config)} is not accepted by dask-jobqueue: "
                         f"{str(exc).splitlines()[0].rstrip('.')}.") from None
    except RuntimeError as exc:  # "Cluster failed to start: <reason>"
        reason = str(exc).removeprefix("Cluster failed to start:").strip().splitlines()[0].rstrip(".")
        raise BestemsheError(f"cannot start the Dask scheduler for SLURM: {reason}.") from None
    return cluster, scaling, wait


def kubernetes_settings(config=None, workers=None):
    """(DaskCluster spec or None, KubeCluster kwargs, scaling, wait seconds) from
    the `kubernetes:` section. With `existing: NAME` the spec is None and the
    running DaskCluster NAME is used."""
    section = dict((config or {}).get("kubernetes", {}))
    path = _path_of(config)
    namespace = section.get("namespace")
    wait = _wait_seconds(section.get("wait_timeout", DEFAULT_WAIT_SECONDS), "kubernetes", path)
    adapt = section.get("adapt")
    replicas = _positive(section.get("workers", 1), "kubernetes.workers", path)
    if workers is None and adapt is None:
        scaling = ("workers", replicas)
    else:
        scaling = _scaling(workers, adapt, "kubernetes", "workers", "workers", path)
    kwargs = {"namespace": namespace} if namespace else {}
    if section.get("existing"):
        if workers is None and adapt is None:
            scaling = ("keep", 1)  # leave a running cluster's size alone
        return None, dict(kwargs, name=str(section["existing"])), scaling, wait
    spec = kubernetes_spec(section, replicas if scaling[0] != "workers" else scaling[1], path)
    kwargs["shutdown_on_close"] = bool(section.get("shutdown_on_close", True))
    return spec, kwargs, scaling, wait


def kubernetes_spec(section: dict, replicas: int, path: str = "the config") -> dict:
    """A DaskCluster resource (kubernetes.dask.org/v1) for the operator: scheduler
    and workers from `image`, worker `resources`, plain `env`, and every key of the
    Secret `env-from-secret` as environment variables (the S3 credentials)."""
    try:
        from dask_kubernetes.operator import make_cluster_spec
    except ImportError:
        raise UsageError("--cluster kubernetes needs dask-kubernetes "
                         "(pip install 'bestemshe_dist[kubernetes]').") from None
    image = section.get("image")
    if not image:
        raise UsageError(f"the section kubernetes in {path} needs image: the bestemshe-dist image "
                         "(deploy/docker/Dockerfile).")
    env = section.get("env") or {}
    if not isinstance(env, dict):
        raise UsageError(f"kubernetes.env in {path} must be a mapping of names to values.")
    for name in _secret_keys(env):
        raise UsageError(f"kubernetes.env in {path} holds a credential ({name}): put it in a Secret "
                         "and name it with env-from-secret.")
    resources = section.get("resources") or {}
    if not isinstance(resources, dict) or set(resources) - {"requests", "limits"}:
        raise UsageError(f"kubernetes.resources in {path} takes requests and limits.")
    threads = _positive(section.get("threads_per_worker", 1), "kubernetes.threads-per-worker", path)
    spec = make_cluster_spec(name=str(section.get("name") or "bestemshe"), image=str(image),
                             n_workers=replicas, resources=resources,
                             env={**SHARED_MEMORY_ENV, **{str(k): str(v) for k, v in env.items()}},
                             scheduler_service_type=str(section.get("scheduler_service_type", "ClusterIP")),
                             idle_timeout=int(section.get("idle_timeout", 0)))
    worker = spec["spec"]["worker"]["spec"]["containers"][0]
    scheduler = spec["spec"]["scheduler"]["spec"]["containers"][0]
    # The image has distributed's `dask` command (the old dask-worker scripts are gone).
    worker["args"] = ["dask", "worker", "--name", "$(DASK_WORKER_NAME)", "--nthreads", str(threads),
                      "--dashboard", "--dashboard-address", "8788",
                      *map(str, section.get("worker_extra_args") or [])]
    scheduler["args"] = ["dask", "scheduler", "--host", "0.0.0.0"]
    scheduler["resources"] = {}
    secret = section.get("env_from_secret")
    for container in (worker, scheduler):
        if not container.get("env"):
            container.pop("env", None)
        if secret:
            container["envFrom"] = [{"secretRef": {"name": str(secret)}}]
    return spec


# --------------------------------------------------------------------- connect

@contextlib.contextmanager
def connect(scheduler: str | None = None, workers: int | None = None,
            threads_per_worker: int | None = None, in_process: bool = False, *,
            cluster: str | None = None, config=None, dashboard_address: str | None = DEFAULT_DASHBOARD,
            log=None):
    """Yield a Client for the chosen backend; close what was started on exit
    (SLURM jobs are cancelled, a KubeCluster made here is deleted).

    in_process keeps local workers as threads of this process, which a memory://
    store needs (it lives in one process's memory). config is a path or a dict
    from load_config. dashboard_address: host:port for the dashboard of a
    cluster started here (a free port when taken; None or "none": no dashboard).
    log, if given, receives a line about the cluster."""
    from distributed import Client

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
        from distributed import LocalCluster

        kwargs = local_cluster_kwargs(config, workers, threads_per_worker, in_process, dashboard_address)
        with _port_taken_is_fine(), dask.config.set(SHARED_MEMORY_WORKERS):
            local = LocalCluster(**kwargs)
        with local, Client(local) as client:
            _say_dashboard(say, "local", local)
            yield client
        return

    if backend == "slurm":
        logging.getLogger("dask_jobqueue").setLevel(logging.ERROR)
        slurm_settings(config, workers, dashboard_address)  # a bad config first, as one sentence
        if not shutil.which("sbatch"):
            raise BestemsheError("sbatch is not on the PATH: --cluster slurm runs where SLURM jobs can be "
                                 "submitted (a login or compute node).")
        made, scaling, wait = slurm_cluster(config, workers, dashboard_address)
        with made, Client(made) as client:
            processes = getattr(getattr(made, "_dummy_job", None), "worker_processes", None)
            expected = _scale(made, scaling, int(processes or 1))
            _say_dashboard(say, "slurm", made, f"{scaling[1]} worker jobs" if scaling[0] == "jobs"
                           else f"adaptive {scaling[1]['minimum']}..{scaling[1]['maximum']} worker jobs")
            _wait_for_workers(client, expected, wait, "SLURM", "check squeue and the worker job logs")
            yield client
        return

    # kubernetes
    spec, kwargs, scaling, wait = kubernetes_settings(config, workers)
    try:
        from dask_kubernetes.operator import KubeCluster
    except ImportError:
        raise UsageError("--cluster kubernetes needs dask-kubernetes "
                         "(pip install 'bestemshe_dist[kubernetes]').") from None
    where = f"{kwargs.get('name') or spec['metadata']['name']} in namespace {kwargs.get('namespace', 'default')}"
    try:
        made = (KubeCluster.from_name(kwargs.pop("name"), **kwargs) if spec is None
                else KubeCluster(custom_cluster_spec=spec, quiet=True, **kwargs))
    except Exception as exc:  # kr8s/kubernetes raise many kinds; one sentence for all
        _forget_failed_kube_clusters(KubeCluster)
        raise BestemsheError(f"cannot start the Kubernetes Dask cluster {where}: "
                             f"{str(exc).splitlines()[0].rstrip('.') if str(exc) else type(exc).__name__}.") from None
    with made, Client(made) as client:
        expected = _scale(made, scaling)
        _say_dashboard(say, "kubernetes", made, where)
        _wait_for_workers(client, expected, wait, "Kubernetes", "check kubectl get pods and their logs")
        yield client


@contextlib.contextmanager
def _port_taken_is_fine():
    """The dashboard moves to a free port when its own is taken (and the start
    line says where): no warning for that."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
        yield


def _forget_failed_kube_clusters(kind):
    """A KubeCluster whose start failed stays registered, and dask-kubernetes' exit
    hook then tries to delete it and prints a traceback: delete what can be
    deleted now, quietly, and unregister the rest."""
    for made in list(getattr(kind, "_instances", ())):
        if getattr(made, "status", None) is not None and made.status.name == "running":
            continue
        with contextlib.suppress(Exception):
            made.close(timeout=10)
        made.shutdown_on_close = False


def _scale(cluster, scaling, processes=None) -> int:
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


def _wait_for_workers(client, expected, seconds, where, hint):
    if expected <= 0:
        return
    try:
        client.wait_for_workers(n_workers=expected, timeout=seconds)
    except TimeoutError:
        try:
            have = len(client.nthreads())
        except Exception:
            have = 0
        raise BestemsheError(f"only {have} of {expected} Dask workers joined on {where} within "
                             f"{seconds:g} s: {hint}.") from None


def dashboard_link(cluster) -> str | None:
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


def _say_dashboard(say, backend, cluster, detail=None):
    link = dashboard_link(cluster)
    parts = [f"{backend} cluster"] + ([detail] if detail else []) + ([f"dashboard {link}"] if link else [])
    say(", ".join(parts))


def _has_dashboard(cluster) -> bool:
    """Whether the scheduler serves the Bokeh dashboard (its HTTP server always runs)."""
    scheduler = getattr(cluster, "scheduler", None)
    application = getattr(scheduler, "http_application", None)
    if application is None:
        return True  # a remote scheduler (Kubernetes): the operator runs it with a dashboard
    return bool(getattr(application, "applications", None))  # the Bokeh apps, when served
