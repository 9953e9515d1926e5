"""A real single-node SLURM (scripts/slurm-single-node.sh, as root): `solve
--cluster slurm` runs its Dask workers as two SLURM batch jobs, and the files
equal a local solve. The fixture stops the daemons and cancels every job even
when a test fails."""

import json
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

ARGS = ["--stones", 10, "--pits", 3, "--chunk-size", 500]


def _squeue(env):
    done = subprocess.run(
        ["squeue", "-h", "-o", "%i %j %T"], env=env, capture_output=True, text=True, timeout=30
    )
    return [line for line in done.stdout.splitlines() if line.strip()]


def test_solve_on_slurm_with_two_worker_jobs_equals_local(slurm, tmp_path):
    env, _state = slurm
    local = _local_solve(ARGS, tmp_path / "local")

    logs = tmp_path / "job-logs"
    config = tmp_path / "slurm.yaml"
    config.write_text(f"""
cluster: slurm
slurm:
  queue: debug
  cores: 1
  processes: 1
  memory: 1GiB
  walltime: "00:15:00"
  interface: lo
  log-directory: {logs}
  worker-extra-args: ["--lifetime", "2h", "--lifetime-stagger", "5m"]
  scale:
    jobs: 2
  wait-timeout: 120
storage:
  url: {tmp_path / "slurm-out"}
""")
    start = time.time()
    done = run_cli("solve", *ARGS, "--config", config, env=env, timeout=400)
    seconds = time.time() - start
    assert done.returncode == 0, done.stderr + "".join(p.read_text() for p in logs.glob("*.err"))
    assert "slurm cluster, 2 worker jobs" in done.stderr
    peaks = [l for l in done.stderr.splitlines() if "peak RSS per worker" in l]
    assert peaks and len(peaks[0].split(":", 2)[-1].split(",")) == 2, done.stderr  # two workers did it
    # Each worker job ran the worker with this project's Python.
    scripts = sorted(logs.glob("*.out")) + sorted(logs.glob("*.err"))
    assert len({p.stem for p in scripts}) == 2, scripts

    out = tmp_path / "slurm-out"
    names = sorted(p.name for p in local.glob("layer_*.bin"))
    assert names and sorted(p.name for p in out.glob("layer_*.bin")) == names
    for name in names:
        assert (out / name).read_bytes() == (local / name).read_bytes(), name
    a, b = (json.loads((d / "manifest.json").read_text()) for d in (local, out))
    assert {k: v for k, v in a.items() if k != "layers"} == {k: v for k, v in b.items() if k != "layers"}
    assert {k: (v["sha256"], v["counts"]) for k, v in a["layers"].items()} == {
        k: (v["sha256"], v["counts"]) for k, v in b["layers"].items()
    }

    # The worker jobs are cancelled when the solve ends.
    deadline = time.time() + 30
    while _squeue(env) and time.time() < deadline:
        time.sleep(0.5)
    assert _squeue(env) == []
    print(f"SLURM solve: {seconds:.1f} s")


def test_no_worker_joins_is_one_sentence(slurm, tmp_path):
    """A job that can never start (more CPUs than the node has) is reported after
    wait-timeout in one sentence, and the pending job is cancelled."""
    env, _ = slurm
    config = tmp_path / "slurm.yaml"
    config.write_text(f"""
cluster: slurm
slurm: {{cores: 64, memory: 1GiB, interface: lo, log-directory: {tmp_path}, wait-timeout: 3}}
""")
    done = run_cli(
        "solve",
        "--stones",
        6,
        "--pits",
        1,
        "--out",
        tmp_path / "out",
        "--config",
        config,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    lines = [l for l in done.stderr.strip().splitlines() if not l.startswith("[")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "0 of 1 Dask worker joined on SLURM within 3 s" in lines[0]
    deadline = time.time() + 30
    while _squeue(env) and time.time() < deadline:
        time.sleep(0.5)
    assert _squeue(env) == []
    assert not Path(tmp_path / "out" / "manifest.json").exists()


def _sbatch_wait(env, *args, timeout=300):
    """Submit a batch job and wait for it (polling quickly: `sbatch --wait` backs off
    to tens of seconds). Returns (state, exit code, sbatch's stderr)."""
    done = subprocess.run(
        ["sbatch", "--parsable", *map(str, args)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    job = done.stdout.strip().split(";")[0]
    deadline = time.time() + timeout
    while time.time() < deadline:
        shown = subprocess.run(
            ["scontrol", "-o", "show", "job", job], env=env, capture_output=True, text=True, timeout=30
        ).stdout
        fields = dict(f.split("=", 1) for f in shown.split() if "=" in f)
        if fields.get("JobState") in (
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "NODE_FAIL",
            "OUT_OF_MEMORY",
        ):
            return fields["JobState"], fields.get("ExitCode"), done.stderr
        time.sleep(0.5)
    subprocess.run(["scancel", job], env=env, timeout=30)
    return "TIMEOUT (test)", None, done.stderr


def _local_solve(args, out):
    """The reference: a local solve, its workers threads of this process (fast)."""
    import fsspec

    from bestemshe_dist.cli import main

    url = f"memory://slurm-reference/{out.name}-{id(out)}"
    assert (
        main(
            [
                "solve",
                *map(str, args),
                "--workers",
                "2",
                "--out",
                url,
                "--quiet",
                "--dashboard-address",
                "none",
            ]
        )
        == 0
    )
    fs = fsspec.filesystem("memory")
    out.mkdir(parents=True)
    for path in fs.ls(url.removeprefix("memory:/"), detail=False):
        name = path.rsplit("/", 1)[1]
        if name.endswith((".bin", ".json")):
            (out / name).write_bytes(fs.cat_file(path))
    fs.rm(url.removeprefix("memory:/"), recursive=True)
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return _local_solve(["--stones", 8, "--pits", 2], tmp_path_factory.mktemp("reference") / "tb")


def _same_layers(a, b):
    names = sorted(p.name for p in a.glob("layer_*.bin"))
    assert names and sorted(p.name for p in b.glob("layer_*.bin")) == names
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_driver_batch_script(slurm, reference, tmp_path):
    """deploy/slurm/driver.sbatch: the driver is a job and submits its worker job."""
    env, _ = slurm
    env = dict(env, BESTEMSHE_VENV=str(ROOT / ".venv"))
    config = tmp_path / "slurm.yaml"
    config.write_text(f"""
slurm: {{cores: 1, memory: 1GiB, interface: lo, log-directory: {tmp_path / "logs"}, wait-timeout: 120}}
storage: {{url: {tmp_path / "out"}}}
""")
    done = _sbatch_wait(
        env,
        "--cpus-per-task=1",
        "--mem=2G",
        "--time=10",
        f"--output={tmp_path}/driver.out",
        "deploy/slurm/driver.sbatch",
        config,
        "--stones",
        8,
        "--pits",
        2,
        "--workers",
        1,
    )
    log = (tmp_path / "driver.out").read_text() if (tmp_path / "driver.out").exists() else ""
    assert done[:2] == ("COMPLETED", "0:0"), (done, log)
    assert (
        "slurm cluster, 1 worker job" in log and "worker jobs" not in log and "done: 9 layers solved" in log
    ), log
    _same_layers(reference, tmp_path / "out")


def test_allocation_batch_script(slurm, reference, tmp_path):
    """deploy/slurm/allocation.sbatch: scheduler and driver on the first node, srun
    dask worker on every node of the allocation."""
    env, _ = slurm
    env = dict(env, BESTEMSHE_VENV=str(ROOT / ".venv"))
    done = _sbatch_wait(
        env,
        "--nodes=1",
        "--cpus-per-task=2",
        "--mem=2G",
        "--time=10",
        f"--output={tmp_path}/alloc.out",
        "deploy/slurm/allocation.sbatch",
        tmp_path / "out",
        "--stones",
        8,
        "--pits",
        2,
    )
    log = (tmp_path / "alloc.out").read_text() if (tmp_path / "alloc.out").exists() else ""
    assert done[:2] == ("COMPLETED", "0:0"), (done, log)
    assert "done: 9 layers solved" in log, log
    _same_layers(reference, tmp_path / "out")
    assert not list(ROOT.glob(".bestemshe-scheduler-*.json"))
