"""Faults in the middle of a solve, each survived with nothing lost: the files end
identical to a clean solve (the published ones, for the 50-stone layers with
k1 + k2 >= 40), and no object is ever half-written under its final name.
Hosts are Linux namespaces (hosts_support.py); the store, a folder or SeaweedFS."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import FIXTURE_M40, ROOT, S3_BUCKET, S3_KEY, S3_SECRET, SeaweedServer, ended
from distributed import get_task_stream

from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.tasks import Job

VARIANT = Variant(50, 5)
CHUNK = 20_000  # every pair of k1 + k2 >= 40 larger than a chunk: rounds of tasks


class Solving(threading.Thread):
    """driver.solve of the layers k1 + k2 >= 40 into `out`, in a thread, its lines kept."""

    def __init__(self, client, out, **job):
        super().__init__(daemon=True)
        self.client, self.out, self.job = client, out, job
        self.lines: list[str] = []
        self.error: BaseException | None = None

    def run(self):
        try:
            solve(
                self.client,
                Job(str(self.out), VARIANT, **self.job),
                make_plan(VARIANT, 40),
                self.lines.append,
                chunk_size=CHUNK,
            )
        except BaseException as exc:  # the test asserts on it
            self.error = exc

    def finish(self, timeout=180):
        self.join(timeout)
        assert not self.is_alive(), "the solve did not end"
        assert self.error is None, f"{self.error!r}\n" + "\n".join(self.lines[-20:])


def running(client, solving, match, timeout=120):
    """(worker address, key) of the first task seen running whose key `match`es."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for worker, keys in client.processing().items():
            for key in keys:
                if match(str(key)):
                    return worker, str(key)
        assert solving.is_alive(), "the solve ended before the fault could be made"
        time.sleep(0.005)
    raise AssertionError("no such task ran")


def a_later_round(key):
    """A round task after the first: the pair has checkpoints, and state on its host."""
    parts = key.split("/round-")
    return len(parts) == 2 and int(parts[1].split("/")[0]) >= 2


def same_as_published(out):
    published = sorted(p.name for p in FIXTURE_M40.glob("*.bin"))
    assert sorted(p.name for p in out.glob("*.bin")) == published
    for name in published:
        assert (out / name).read_bytes() == (FIXTURE_M40 / name).read_bytes(), name


def test_a_host_lost_mid_round_and_one_added(make_hosts, tmp_path):
    """The host running a round is killed and its namespace removed: the round runs
    again on another host (which rebuilds the pair from the checkpoints); a host
    added then takes work; the files are the published ones."""
    hosts = make_hosts(3)
    out = tmp_path / "out"
    with hosts.client() as client, get_task_stream(client) as stream:
        solving = Solving(client, out)
        solving.start()
        worker, _ = running(client, solving, a_later_round)
        lost = hosts.index_of(worker)
        hosts.remove_host(lost)
        hosts.add_host(3)
        hosts.start_worker(3)
        solving.finish()
    same_as_published(out)
    text = "\n".join(solving.lines)
    assert "again" in text, text  # the round in flight ran again elsewhere
    late = {t["worker"] for t in stream.data if f"//{hosts.host_address(3)}:" in t["worker"]}
    assert late, "the host added mid-solve took no work"


def test_a_host_cut_off_the_network_then_back(make_hosts, tmp_path):
    """The host running a round loses its network for longer than the scheduler
    waits for a worker's heartbeat (5 s here), then gets it back. Its round runs
    again elsewhere; the task it went on running writes the same checkpoint parts
    and is never counted (a round applied twice would decrement counts twice and
    change the files); a worker on the host joins again."""
    # The scheduler removes a worker silent for 5 s (Dask's default: 5 minutes; a
    # worker with a nanny gets 30 s more, for the nanny to restart it).
    hosts = make_hosts(3, scheduler_env={"DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": "5s"}, nanny=False)
    out = tmp_path / "out"
    with hosts.client() as client:
        solving = Solving(client, out)
        solving.start()
        worker, _ = running(client, solving, a_later_round)
        cut = hosts.index_of(worker)
        hosts.cut(cut)
        time.sleep(12)
        hosts.cut(cut, up=True)
        # Back, the worker hears the scheduler forgot it and stops; the host's
        # manager (SLURM, Kubernetes) starts another, which joins.
        hosts.workers.pop(cut).wait(timeout=60)
        hosts.start_worker(cut)
        solving.finish()
        client.wait_for_workers(3, timeout=60)
        assert any(f"//{hosts.host_address(cut)}:" in w for w in client.scheduler_info()["workers"])
    same_as_published(out)
    assert "running it again elsewhere" in "\n".join(solving.lines)


@pytest.mark.parametrize(
    "method, phase",
    [("frontier", "/flush-"), ("counting", "/publish-")],
    ids=["during a flush", "during publication"],
)
def test_a_worker_killed_at_its_peak(make_hosts, tmp_path, method, phase):
    """SIGKILL, as the kernel's OOM killer sends it, to the worker process running a
    flush (a host's round array written out as checkpoint parts) or a part of a
    layer's publication, when it holds the most. Its nanny starts another on the
    same host, the work runs again, and the files are the published ones."""
    hosts = make_hosts(3)
    out = tmp_path / "out"
    with hosts.client() as client:
        pids = client.run(os.getpid)
        solving = Solving(client, out, method=method)
        solving.start()
        worker, _ = running(client, solving, lambda key: phase in key)
        os.kill(pids[worker], signal.SIGKILL)
        solving.finish()
        assert worker not in client.scheduler_info()["workers"]  # it did die
    same_as_published(out)


def cli(*args, **popen):
    """`bestemshe-dist ARGS` as a user runs it, its own process group."""
    return subprocess.Popen(
        [sys.executable, "-m", "bestemshe_dist", *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **popen,
    )


def solve_args(out, *more):
    return ["solve", "--min-captured", 40, "--chunk-size", CHUNK, "--out", out, *more]


def test_the_scheduler_killed_mid_round(make_hosts, tmp_path):
    """The scheduler dies in the middle of a round: the solve stops with one sentence
    (exit 1); a new scheduler at the same address, the workers back, and the same
    command resumes to the published files."""
    hosts = make_hosts(3)
    out = tmp_path / "out"
    args = solve_args(out, "--scheduler", hosts.scheduler_address)
    hosts.client().close()  # every worker has joined
    first = cli(*args)
    deadline = time.time() + 120
    while not list(out.glob(".bestemshe/pairs/*/round-00002/complete.json")):
        assert first.poll() is None and time.time() < deadline, first.stderr.read()
        time.sleep(0.01)
    hosts.kill_scheduler()
    err = ended(first, 180)
    assert first.returncode == 1, err
    last = err.strip().splitlines()[-1]
    assert "lost its Dask scheduler" in last and "run the same command again" in last, err
    assert "Traceback" not in err, err
    # Workers stop without their scheduler; the cluster's manager starts them again.
    for i in list(hosts.workers):
        hosts.workers.pop(i).wait(timeout=120)
    hosts.start_scheduler()
    for i in range(3):
        hosts.start_worker(i)
    hosts.client().close()
    again = cli(*args)
    err = ended(again, 300)
    assert again.returncode == 0, err
    assert "resuming after round" in err, err
    same_as_published(out)


@pytest.fixture
def small_disk(tmp_path):
    """A folder on a tmpfs of its own, 16 MiB, unmounted however the test ends."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)], check=True)
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def test_the_output_store_full(small_disk):
    """The output folder fills up mid-solve: one sentence naming the file and the
    bytes it needed (exit 1), no layer published in part; space freed, the same
    command resumes to the published files."""
    ballast = small_disk / "ballast"
    free = shutil.disk_usage(small_disk).free
    ballast.write_bytes(b"\0" * (free - 96 * 1024))  # room for a few layers and rounds
    out = small_disk / "out"
    args = solve_args(out, "--workers", 2, "--quiet")
    first = cli(*args)
    err = ended(first, 300)
    assert first.returncode == 1, err
    assert len(err.strip().splitlines()) == 1, err
    assert "the store is full (" in err and "bytes to write" in err and "run the same command again" in err, (
        err
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert 0 < len(manifest["layers"]) < 15  # some layers were published, not all
    for layer in manifest["layers"]:  # each published layer whole
        for kind in ("win", "draw"):
            name = f"layer_{layer}_{kind}.bin"
            assert (out / name).read_bytes() == (FIXTURE_M40 / name).read_bytes(), name
    ballast.unlink()
    again = cli(*args)
    err = ended(again, 300)
    assert again.returncode == 0, err
    same_as_published(out)


def s3(**options):
    """An s3fs client of the tests' SeaweedFS."""
    import s3fs

    return s3fs.S3FileSystem(
        key=S3_KEY,
        secret=S3_SECRET,
        skip_instance_cache=True,
        client_kwargs={"endpoint_url": SeaweedServer.endpoint},
        **options,
    )


def s3_files(prefix):
    """{name: bytes} of the layer files under s3://tablebase/<prefix>."""
    fs = s3()
    return {p.rsplit("/", 1)[-1]: fs.cat_file(p) for p in fs.glob(f"{S3_BUCKET}/{prefix}/layer_*.bin")}


def until_round(proc, round_=2):
    """Read the solve's lines until some pair has finished round `round_`."""
    for line in proc.stderr:
        if f" round {round_} (" in line:
            return
    raise AssertionError("the solve ended before the fault could be made")


def same_as_published_on_s3(prefix):
    found = s3_files(prefix)
    published = {p.name: p.read_bytes() for p in FIXTURE_M40.glob("*.bin")}
    assert sorted(found) == sorted(published)
    for name, data in published.items():
        assert found[name] == data, name


def test_the_s3_store_stopped_mid_round_and_started_again(seaweed_server):
    """SeaweedFS stops in the middle of a round and starts again 12 s later: the
    solve's reads and writes are tried again, waiting longer each time, and it
    ends with the published files."""
    args = solve_args(f"s3://{S3_BUCKET}/faults-restart", "--workers", 2)
    proc = cli(*args, env=seaweed_server.client_env)
    until_round(proc)
    seaweed_server.stop()
    time.sleep(12)
    seaweed_server.start()
    err = ended(proc, 300)
    assert proc.returncode == 0, err
    same_as_published_on_s3("faults-restart")


def test_the_s3_store_stopped_for_good(seaweed_server):
    """SeaweedFS stops and stays down: after the tool's patience (5 s here; 120 s
    by default) the solve stops with one sentence naming the store, exit 1; once the
    store is back, the same command resumes to the published files."""
    env = dict(seaweed_server.client_env, BESTEMSHE_STORE_PATIENCE="5")
    # botocore's own tries (5 by default, about 9 s a call here) off: the tool's patience decides
    quick = json.dumps({"config_kwargs": {"retries": {"max_attempts": 1}}})
    args = solve_args(f"s3://{S3_BUCKET}/faults-gone", "--workers", 2, "--storage-options", quick)
    proc = cli(*args, env=env)
    until_round(proc)
    seaweed_server.stop()
    try:
        err = ended(proc, 300)
    finally:
        seaweed_server.start()
    assert proc.returncode == 1, err
    last = err.strip().splitlines()[-1]
    assert f"s3://{S3_BUCKET}/faults-gone" in last and "did not answer" in last, err
    assert "run the same command again" in last and "Traceback" not in err, err
    again = cli(*args, env=seaweed_server.client_env)
    err = ended(again, 300)
    assert again.returncode == 0, err
    same_as_published_on_s3("faults-gone")


def fill(prefix):
    """Write objects under `prefix` until the server refuses one: its volumes are full."""
    fs = s3(config_kwargs={"retries": {"max_attempts": 1}})
    ballast = os.urandom(256 * 1024)
    for i in range(64):
        try:
            fs.pipe(f"{S3_BUCKET}/{prefix}/{i}", ballast)
        except OSError:
            return
    raise AssertionError("SeaweedFS took 16 MiB past its volume limit")


def test_a_seaweedfs_volume_at_its_limit(seaweed_server, tmp_path):
    """SeaweedFS with one volume of 2 MiB fills up mid-solve: the write (a block's,
    or a layer file's publication) is tried again for the tool's patience, then one
    sentence with the object and its bytes (exit 1), every layer in the manifest
    whole; volumes added (the server started again with room for more), the same
    command resumes to the published files."""
    seaweed_server.stop()  # this test's server takes its port
    small = SeaweedServer(tmp_path / "weed", "-master.volumeSizeLimitMB=2", "-volume.max=1")
    small.start()
    try:
        env = dict(small.client_env, BESTEMSHE_STORE_PATIENCE="5")
        quick = json.dumps({"config_kwargs": {"retries": {"max_attempts": 1}}})
        args = solve_args(f"s3://{S3_BUCKET}/faults-full", "--workers", 2, "--storage-options", quick)
        proc = cli(*args, env=env)
        until_round(proc)
        fill("ballast")
        err = ended(proc, 300)
        assert proc.returncode == 1, err
        last = err.strip().splitlines()[-1]
        # the first write to meet the full volume: a block's, or a layer file's publication (a copy)
        assert re.search(rf"cannot (write|publish) s3://{S3_BUCKET}/faults-full/", last), err
        assert "bytes to write" in last, err
        assert "add volumes" in last and "run the same command again" in last, err
        assert "Traceback" not in err, err
        found = s3_files("faults-full")
        manifest = json.loads(s3().cat_file(f"{S3_BUCKET}/faults-full/manifest.json"))
        for layer in manifest["layers"]:  # each published layer whole
            for kind in ("win", "draw"):
                name = f"layer_{layer}_{kind}.bin"
                assert found[name] == (FIXTURE_M40 / name).read_bytes(), name
        assert len(manifest["layers"]) < 15, "the volume filled after the last layer"
        small.stop()
        small.options = ["-master.volumeSizeLimitMB=2", "-volume.max=8"]  # volumes added
        small.start()
        again = cli(*args, env=small.client_env)
        err = ended(again, 300)
        assert again.returncode == 0, err
        same_as_published_on_s3("faults-full")
    finally:
        small.stop()
        seaweed_server.start()


def test_a_slurm_worker_job_cancelled_mid_round(slurm, tmp_path):
    """On the single-node SLURM, one of the solve's two worker jobs is cancelled
    (`scancel`) in the middle of a round: the solve submits it again and ends with
    the published files."""
    env, _ = slurm
    env = dict(env, DASK_DISTRIBUTED__DEPLOY__LOST_WORKER_TIMEOUT="2s")  # Dask's default: 15 s
    out = tmp_path / "out"
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
  log-directory: {tmp_path / "job-logs"}
  scale:
    jobs: 2
  wait-timeout: 120
""")
    # chunks of 4,000: rounds of many tasks, so that the solve outlasts Dask letting
    # the job go (2 s here) and the solve's look for ended jobs (every 5 s)
    proc = cli(*solve_args(out, "--config", config, "--chunk-size", 4_000), env=env)
    until_round(proc)
    jobs = subprocess.run(
        ["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True
    ).stdout.split()
    assert len(jobs) == 2, jobs
    subprocess.run(["scancel", jobs[0]], env=env, check=True)
    err = ended(proc, 400)
    assert proc.returncode == 0, err
    assert "ended; submitting it again" in err, err
    same_as_published(out)
