"""The launch files, checked offline: the Kubernetes manifests (and the DaskCluster
spec cluster.py generates) against the CRD schemas dask-kubernetes ships and the
built-in kinds against Kubernetes' own schemas (kubernetes-validate); the
docker-compose.yml against the compose specification and Docker Compose itself;
the SLURM batch scripts with bash -n."""

import copy
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from conftest import ROOT

CRDS = None


def _crd_schemas():
    import dask_kubernetes

    folder = (
        Path(dask_kubernetes.__file__).parent
        / "operator"
        / "deployment"
        / "helm"
        / "dask-kubernetes-operator"
        / "crds"
    )
    schemas = {}
    for path in folder.glob("*.yaml"):
        crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        for version in crd["spec"]["versions"]:
            key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
            schema = _strict(version["schema"]["openAPIV3Schema"])
            kind = jsonschema.validators.validator_for(schema)
            kind.check_schema(schema)
            schemas[key] = kind(schema)
    return schemas


def _strict(schema):
    """Refuse unknown fields (a misspelled key) wherever the schema lists the fields,
    as the API server's strict field validation does."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if (
                "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")
            ):
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    # Every object has these at the top; the CRD schemas leave them implicit.
    schema["properties"].update(
        apiVersion={"type": "string"}, kind={"type": "string"}, metadata={"type": "object"}
    )
    schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind", "metadata"})
    return schema


def validate_manifest(doc):
    """A DaskCluster/DaskJob against its CRD (its pod specs also as Pods), anything
    else with kubernetes-validate (strict)."""
    import kubernetes_validate
    from kubernetes_validate.utils import latest_version

    global CRDS
    CRDS = CRDS or _crd_schemas()
    key = (doc["apiVersion"], doc["kind"])
    if key in CRDS:
        CRDS[key].validate(doc)
        for name, spec in _pod_specs(doc):
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
            kubernetes_validate.validate(pod, latest_version(), strict=True)
        return
    kubernetes_validate.validate(doc, latest_version(), strict=True)


def _pod_specs(doc):
    spec = doc["spec"]
    if doc["kind"] == "DaskJob":
        yield "job", spec["job"]["spec"]
        spec = spec["cluster"]["spec"]
    yield "scheduler", spec["scheduler"]["spec"]
    yield "worker", spec["worker"]["spec"]


def _documents(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.mark.parametrize("name", ["daskjob.yaml", "secret.yaml", "server.yaml"])
def test_kubernetes_manifests_validate(name):
    docs = _documents(ROOT / "deploy" / "kubernetes" / name)
    assert docs
    for doc in docs:
        validate_manifest(doc)


def test_daskjob_runs_the_solver_against_s3_with_the_secret():
    (job,) = _documents(ROOT / "deploy" / "kubernetes" / "daskjob.yaml")
    (secret,) = _documents(ROOT / "deploy" / "kubernetes" / "secret.yaml")
    runner = job["spec"]["job"]["spec"]["containers"][0]
    assert runner["args"][:4] == ["bestemshe-dist", "solve", "--scheduler", "$(DASK_SCHEDULER_ADDRESS)"]
    assert runner["args"][runner["args"].index("--out") + 1].startswith("s3://")
    worker = job["spec"]["cluster"]["spec"]["worker"]["spec"]["containers"][0]
    for container in (runner, worker):
        assert container["envFrom"] == [{"secretRef": {"name": secret["metadata"]["name"]}}]
    assert set(secret["stringData"]) == {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
    # The arguments are the CLI's own.
    from bestemshe_dist.cli import build_parser

    args = [a.replace("$(DASK_SCHEDULER_ADDRESS)", "tcp://x:8786") for a in runner["args"][1:]]
    parsed = build_parser().parse_args(args)
    assert parsed.scheduler == "tcp://x:8786" and parsed.min_captured == 36


def test_server_deployment_serves_the_solved_bucket():
    deployment, service = _documents(ROOT / "deploy" / "kubernetes" / "server.yaml")
    (job,) = _documents(ROOT / "deploy" / "kubernetes" / "daskjob.yaml")
    (secret,) = _documents(ROOT / "deploy" / "kubernetes" / "secret.yaml")
    assert (deployment["kind"], service["kind"]) == ("Deployment", "Service")
    (server,) = deployment["spec"]["template"]["spec"]["containers"]
    solve = job["spec"]["job"]["spec"]["containers"][0]["args"]
    args = server["args"]
    assert args[:3] == ["bestemshe-dist", "serve", solve[solve.index("--out") + 1]]
    assert args[args.index("--storage-options") + 1] == solve[solve.index("--storage-options") + 1]
    assert server["envFrom"] == [{"secretRef": {"name": secret["metadata"]["name"]}}]
    from bestemshe_dist.cli import build_parser

    parsed = build_parser().parse_args(args[1:])
    assert (parsed.host, parsed.port) == ("0.0.0.0", 8000)
    assert server["ports"] == [{"name": "http", "containerPort": parsed.port, "protocol": "TCP"}]
    for probe in ("readinessProbe", "livenessProbe"):
        assert server[probe]["httpGet"] == {"port": "http", "path": "/api/health"}
    # the memory limit holds the block cache and the process's own ~150 MiB
    limit = server["resources"]["limits"]["memory"]
    assert limit.endswith("Mi") and int(limit[:-2]) >= parsed.cache_mib + 256
    # the Service reaches these pods, on the container's named port
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert (
        deployment["spec"]["selector"]["matchLabels"].items()
        <= deployment["spec"]["template"]["metadata"]["labels"].items()
    )
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    bad = copy.deepcopy(deployment)
    bad["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}
    with pytest.raises(Exception):
        validate_manifest(bad)


def test_misspelled_field_is_caught():
    (job,) = _documents(ROOT / "deploy" / "kubernetes" / "daskjob.yaml")
    bad = copy.deepcopy(job)
    bad["spec"]["cluster"]["spec"]["worker"]["replicaz"] = 2
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest(bad)
    bad = copy.deepcopy(job)
    bad["spec"]["job"]["spec"]["containers"][0]["envFromm"] = []
    with pytest.raises(Exception):
        validate_manifest(bad)
    (secret,) = _documents(ROOT / "deploy" / "kubernetes" / "secret.yaml")
    with pytest.raises(Exception):
        validate_manifest(dict(secret, strinData={}))


def test_generated_daskcluster_spec_validates():
    from bestemshe_dist.cluster import kubernetes_settings, load_config

    config = load_config(ROOT / "configs" / "kubernetes.yaml")
    spec, kwargs, scaling, _ = kubernetes_settings(config)
    validate_manifest(spec)
    worker = spec["spec"]["worker"]["spec"]["containers"][0]
    assert worker["envFrom"] == [{"secretRef": {"name": "bestemshe-s3"}}]
    assert worker["resources"]["limits"]["memory"] == "8Gi"
    assert spec["spec"]["worker"]["replicas"] == 4 and scaling == ("workers", 4)
    assert kwargs == {"namespace": "default", "shutdown_on_close": True}
    # --workers wins; a minimal section validates too.
    spec, _, scaling, _ = kubernetes_settings({"kubernetes": {"image": "img:1"}}, workers=3)
    validate_manifest(spec)
    assert spec["spec"]["worker"]["replicas"] == 3 and scaling == ("workers", 3)
    assert "envFrom" not in spec["spec"]["worker"]["spec"]["containers"][0]


def _compose_binary():
    import compose

    return Path(compose.__file__).parent / "docker-compose"


def test_compose_file_validates(tmp_path):
    path = ROOT / "docker-compose.yml"
    checked = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith(("S3_", "COMPOSE_"))}
    config = subprocess.run(
        [str(_compose_binary()), "-f", str(path), "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert config.returncode == 0, config.stderr
    import json

    services = json.loads(config.stdout)["services"]
    assert set(services) == {"s3", "bucket", "scheduler", "worker", "solver", "server"}
    assert "8787" in {str(p.get("published")) for p in services["scheduler"]["ports"]}
    assert services["worker"]["deploy"]["replicas"] == 2
    solver = services["solver"]["command"]
    assert solver[:2] == ["bestemshe-dist", "solve"] and "s3://tablebase/demo" in solver
    assert solver[solver.index("--min-captured") + 1] == "36"
    assert services["solver"]["depends_on"]["bucket"]["condition"] == "service_completed_successfully"
    assert "mc mb" in " ".join(services["bucket"]["command"])
    server = services["server"]
    assert server["command"][:3] == ["bestemshe-dist", "serve", "s3://tablebase/demo"]
    assert server["depends_on"]["solver"]["condition"] == "service_completed_successfully"
    assert {(str(p["published"]), str(p["target"])) for p in server["ports"]} == {("8000", "8000")}
    assert "/api/health" in " ".join(server["healthcheck"]["test"])
    from bestemshe_dist.cli import build_parser

    parsed = build_parser().parse_args(server["command"][1:])
    assert (parsed.host, parsed.port) == ("0.0.0.0", 8000)
    # The real compose binary rejects a broken file (so the check above means something).
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(
        path.read_text().replace("    deploy:\n      replicas: 2", "    deploy:\n      replicas: two")
    )
    bad = subprocess.run(
        [str(_compose_binary()), "-f", str(broken), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode != 0


def test_dockerfile_installs_the_package():
    text = (ROOT / "deploy" / "docker" / "Dockerfile").read_text()
    assert text.startswith("#") and "\nFROM python:3" in text
    assert "COPY bestemshe_dist ./bestemshe_dist" in text and "pip install ." in text


@pytest.mark.parametrize("name", ["driver.sbatch", "allocation.sbatch"])
def test_slurm_batch_scripts_parse(name):
    path = ROOT / "deploy" / "slurm" / name
    assert path.read_text().startswith("#!/bin/bash\n#SBATCH")
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0


def _images(node):
    """Every `image:` value in a parsed YAML document, however deep."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "image" and isinstance(value, str):
                yield value
            else:
                yield from _images(value)
    elif isinstance(node, list):
        for value in node:
            yield from _images(value)


def _tag(ref: str) -> str | None:
    """The tag of an image reference (registry:port/name:tag@digest), None without one."""
    name = ref.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else None


def test_every_image_is_pinned_to_a_release_not_latest():
    """A pull next year gets the same server: no `:latest` and no bare name in the
    compose file, the Dockerfile's FROM, the Kubernetes manifests or the configs."""
    found = {}
    for path in [
        ROOT / "docker-compose.yml",
        *(ROOT / "deploy").rglob("*.yaml"),
        *(ROOT / "configs").glob("*.yaml"),
    ]:
        for doc in yaml.safe_load_all(path.read_text()):
            for ref in _images(doc):
                found.setdefault(ref, path.relative_to(ROOT))
    for path in (ROOT / "deploy").rglob("Dockerfile*"):
        for line in path.read_text().splitlines():
            if line.startswith("FROM "):
                found.setdefault(line.split()[1], path.relative_to(ROOT))
    assert "minio/minio:RELEASE.2025-04-22T22-12-26Z" in found and "python:3.12-slim" in found, found
    loose = {ref: str(where) for ref, where in found.items() if _tag(ref) in (None, "latest")}
    assert not loose, f"images without a pinned tag: {loose}"
    assert _tag("registry:5000/a/b") is None and _tag("a/b:1.2@sha256:00") == "1.2"
