"""A cluster config (YAML) and the command line made into settings: sections and
their keys, the storage section's URL and options (credentials only through
environment variables), which backend, scaling, dashboard and wait settings.
The defaults every backend shares are here."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeAlias

from ..errors import UsageError

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
SHARED_MEMORY_WORKERS = {
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
}
SHARED_MEMORY_ENV = {
    "DASK_" + key.upper().replace(".", "__").replace("-", "_"): "False" for key in SHARED_MEMORY_WORKERS
}
DEFAULT_WAIT_SECONDS = 600
NO_DASHBOARD_HTTP = "127.0.0.1:0"  # without a dashboard, the scheduler's /health server
# ("jobs" / "workers" / "keep", N) or ("adapt", {"minimum": a, "maximum": b})
Scaling: TypeAlias = tuple[str, Any]

# min-captured: solve's scope (k1 + k2 >= M), so a config names how much it solves.
_TOP_KEYS = {"cluster", "scheduler", "storage", "min-captured", *BACKENDS}
_LOCAL_KEYS = {"workers", "threads_per_worker", "memory_limit", "dashboard_address"}
# Ours, besides the SLURMCluster keyword arguments (jobqueue.yaml's keys).
_SLURM_OWN = {"scale", "adapt", "wait_timeout"}
_KUBE_KEYS = {
    "name",
    "namespace",
    "image",
    "workers",
    "threads_per_worker",
    "resources",
    "env",
    "env_from_secret",
    "worker_extra_args",
    "existing",
    "adapt",
    "wait_timeout",
    "scheduler_service_type",
    "idle_timeout",
    "shutdown_on_close",
}
_STORAGE_KEYS = {"url", "endpoint", "key_env", "secret_env", "token_env", "options"}
# Option or variable names that hold a credential (lower case): these exact names,
# and any name containing one of the words.
_SECRET_NAMES = {"key", "access_key", "aws_access_key_id", "access_key_id", "session_token"}
_SECRET_WORDS = ("secret", "token", "password", "passwd", "credential")


def _norm(section: dict[Any, Any]) -> dict[str, Any]:
    """jobqueue.yaml writes `job-extra-directives`; Python writes underscores."""
    return {str(k).replace("-", "_"): v for k, v in section.items()}


def load_config(path: str | os.PathLike[str]) -> dict[str, Any]:
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
    unknown = sorted(str(k) for k in raw if str(k).replace("_", "-") not in _TOP_KEYS)
    if unknown:
        raise UsageError(
            f"the config {path} has an unknown section {unknown[0]!r} "
            f"(known: {', '.join(sorted(_TOP_KEYS))})."
        )
    config: dict[str, Any] = {"_path": str(path)}
    for key, value in raw.items():
        if str(key).replace("_", "-") == "min-captured":
            config["min_captured"] = _min_captured(value, path)
            continue
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


def _min_captured(value: object, path: Path) -> int:
    """min-captured: a whole number >= 0 here; that it is even and within the game is
    checked with the variant when the plan is made (game/dag.py's make_plan), before
    anything starts."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(
            f"min-captured in the config {path} must be a whole number of at least 0, not {value!r}."
        )
    return value


def _check_keys(config: dict[str, Any], section: str, allowed: set[str]) -> None:
    unknown = sorted(set(config.get(section, {})) - allowed)
    if unknown:
        raise UsageError(
            f"the section {section} in the config {config['_path']} has an unknown key "
            f"{unknown[0].replace('_', '-')!r}."
        )


def _slurm_keys() -> set[str]:
    """The keys dask-jobqueue's SLURMCluster takes (its jobqueue.yaml section)."""
    import dask

    try:
        import dask_jobqueue  # noqa: F401  (registers the jobqueue config defaults)
    except ImportError:
        pass
    keys = {k.replace("-", "_") for k in (dask.config.get("jobqueue.slurm", default={}) or {})}
    return keys | {
        "cores",
        "memory",
        "processes",
        "python",
        "interface",
        "queue",
        "account",
        "walltime",
        "job_extra_directives",
        "worker_extra_args",
        "job_script_prologue",
        "log_directory",
        "local_directory",
        "scheduler_options",
        "job_cpu",
        "job_mem",
        "death_timeout",
        "name",
        "shebang",
        "nanny",
        "protocol",
        "security",
        "job_directives_skip",
        "worker_command",
        "host",
        "port",
    }


def path_of(config: dict[str, Any] | None) -> str:
    return (config or {}).get("_path", "the config")


def storage_from_config(config: dict[str, Any] | None) -> tuple[str | None, dict[str, Any]]:
    """The output URL and fsspec storage options of a config's `storage:` section.

    `endpoint` becomes `client_kwargs.endpoint_url`; `options` is passed as is;
    `key-env` / `secret-env` / `token-env` name environment variables whose values
    become `key` / `secret` / `token` (without them s3fs reads the usual AWS_*
    variables itself). A credential written in the file is refused."""
    section = dict((config or {}).get("storage", {}))
    path = path_of(config)
    options = section.get("options") or {}
    if not isinstance(options, dict):
        raise UsageError(f"storage.options in {path} must be a mapping.")
    options = copy.deepcopy(options)
    for name in secret_keys(options):
        raise UsageError(
            f"storage.options in {path} holds a credential ({name}): name an environment "
            "variable with key-env / secret-env instead."
        )
    if section.get("endpoint"):
        options.setdefault("client_kwargs", {})["endpoint_url"] = str(section["endpoint"])
    for option in ("key", "secret", "token"):
        variable = section.get(f"{option}_env")
        if variable:
            if str(variable) not in os.environ:
                raise UsageError(
                    f"the environment variable {variable} named by storage.{option}-env in {path} is not set."
                )
            options[option] = os.environ[str(variable)]
    url = section.get("url")
    return (str(url) if url else None), options


def secret_keys(value: object, prefix: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{prefix}{key}"
            lowered = str(key).lower()
            if (
                isinstance(item, (str, bytes))
                and not lowered.endswith(("_env", "_url", "_file"))
                and (lowered in _SECRET_NAMES or any(w in lowered for w in _SECRET_WORDS))
            ):
                yield name
            yield from secret_keys(item, name + ".")


def merge_options(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of storage options: `override` (the command line) wins."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_options(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def choose_backend(
    cluster: str | None, scheduler: str | None, config: dict[str, Any] | None
) -> tuple[str, str | None]:
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


def scaling_of(
    workers: int | None, adapt: object, backend: str, unit: str, unit_words: str, path: str
) -> Scaling:
    """("jobs"/"workers", N) from --workers, else ("adapt", {minimum, maximum}) from
    the config's `adapt` section."""
    if workers is not None:
        return unit, positive(workers, "--workers", "the command line")
    if not isinstance(adapt, dict) or set(adapt) - {"minimum", "maximum"}:
        raise UsageError(f"{backend}.adapt in {path} takes minimum and maximum ({unit_words}).")
    return "adapt", {
        "minimum": positive(adapt.get("minimum", 1), f"{backend}.adapt.minimum", path),
        "maximum": positive(adapt.get("maximum", 1), f"{backend}.adapt.maximum", path),
    }


def positive(value: Any, what: str, path: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{what} in {path} must be a whole number.") from None
    if number < 1 or number != value:
        raise UsageError(f"{what} in {path} must be a whole number of at least 1.")
    return number


def dashboard_of(parameter: str | None, section: dict[str, Any]) -> str | None:
    """The command line's dashboard address wins; else the config's; else the default.
    None or "none" turns the dashboard off."""
    value = parameter
    if parameter == DEFAULT_DASHBOARD and "dashboard_address" in section:
        value = section["dashboard_address"]
    if value is None or str(value).strip().lower() in ("none", ""):
        return None
    return str(value)


def wait_seconds(value: Any, section: str, path: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{section}.wait-timeout in {path} must be a number of seconds.") from None
    if seconds <= 0:
        raise UsageError(f"{section}.wait-timeout in {path} must be positive.")
    return seconds
