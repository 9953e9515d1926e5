"""Separate hosts on one machine, for tests: Linux namespaces made and removed here.

Each host is a network namespace with its own address on a bridge this module
makes, its own hostname (a UTS namespace) and its own /dev/shm (a mount
namespace with a tmpfs of its own), running one Dask worker. The scheduler and
the test's client stay outside, on the bridge's own address, so every packet
goes between the namespaces made here and that address. `Hosts.close` removes
every worker, namespace and link, and runs however the test ends (the fixture
that makes the hosts calls it in a finalizer). Needs root, `ip` and `unshare`
(tests/README.md).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

from distributed import Client

HERE = Path(__file__).resolve().parent


def available() -> str | None:
    """Why hosts cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "making network namespaces needs root"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


class Hosts:
    """`count` hosts on a bridge of their own, named after a random tag so that
    runs side by side never share a name or a subnet."""

    def __init__(
        self,
        count: int,
        logs: Path,
        threads: int = 1,
        scheduler_env: dict[str, str] | None = None,
        nanny: bool = True,
    ) -> None:
        self.count = count
        self.threads = threads
        self.nanny = nanny
        self.scheduler_env = dict(os.environ, **(scheduler_env or {}))
        self.logs = logs
        self.tag = secrets.token_hex(3)
        # a /24 out of 10.128.0.0/9, by the tag: two runs at once almost never meet
        octets = int(self.tag, 16) % (1 << 15)
        self.prefix = f"10.{128 + (octets >> 8)}.{octets & 0xFF}"
        self.bridge = f"bst{self.tag}"
        self.address = f"{self.prefix}.1"  # the scheduler's, on the bridge
        self.workers: dict[int, subprocess.Popen[bytes]] = {}
        self.scheduler: subprocess.Popen[bytes] | None = None
        self.made: list[int] = []

    # -- names -------------------------------------------------------------------------
    def namespace(self, i: int) -> str:
        return f"bst{self.tag}h{i}"

    def host_address(self, i: int) -> str:
        return f"{self.prefix}.{10 + i}"

    def hostname(self, i: int) -> str:
        return f"host{i}-{self.tag}"

    def index_of(self, worker_address: str) -> int:
        """The host a worker's address belongs to."""
        for i in self.workers:
            if f"//{self.host_address(i)}:" in worker_address:
                return i
        raise KeyError(worker_address)

    @property
    def scheduler_address(self) -> str:
        return f"tcp://{self.address}:{self.port}"

    # -- making ------------------------------------------------------------------------
    def open(self) -> Hosts:
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.address}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for i in range(self.count):
            self.add_host(i)
        self.port = _free_port(self.address)
        self.logs.mkdir(parents=True, exist_ok=True)
        self.start_scheduler()
        for i in range(self.count):
            self.start_worker(i)
        return self

    def start_scheduler(self) -> None:
        """The scheduler, on the bridge's address (again on the same port after a kill)."""
        self.scheduler = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                self.address,
                "--port",
                str(self.port),
                "--dashboard-address",
                f"{self.address}:0",
            ],
            env=self.scheduler_env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.logs / "scheduler.log", "ab"),
            start_new_session=True,
        )

    def add_host(self, i: int) -> None:
        """Host i's namespace, its end of a veth pair and its address."""
        ns, outer, inner = self.namespace(i), f"bst{self.tag}v{i}", f"bst{self.tag}p{i}"
        _ip("netns", "add", ns)
        self.made.append(i)
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", ns)
        _ip("link", "set", outer, "master", self.bridge)
        _ip("link", "set", outer, "up")
        _ip("-n", ns, "addr", "add", f"{self.host_address(i)}/24", "dev", inner)
        _ip("-n", ns, "link", "set", inner, "up")
        _ip("-n", ns, "link", "set", "lo", "up")

    def start_worker(self, i: int) -> None:
        """One Dask worker on host i: its own hostname and /dev/shm, its address
        (again after it ended: as a cluster's manager starts a worker that stopped)."""
        worker = (
            f"exec {sys.executable} -m distributed.cli.dask_worker {self.scheduler_address} "
            f"--host {self.host_address(i)} --nthreads {self.threads} --nworkers 1 "
            f"--name host{i} --no-dashboard --death-timeout 60{'' if self.nanny else ' --no-nanny'}"
        )
        script = f"mount -t tmpfs tmpfs /dev/shm && hostname {self.hostname(i)} && {worker}"
        # The tests' helpers (this module) importable there, as in the test process.
        env = dict(
            os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
        )
        self.workers[i] = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                self.namespace(i),
                "unshare",
                "--mount",
                "--uts",
                "--fork",
                "sh",
                "-c",
                script,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.logs / f"host{i}.log", "wb"),
            start_new_session=True,
        )

    def client(self, timeout: float = 60.0) -> Client:
        """A client of the hosts' scheduler, once every worker has joined."""
        client = Client(self.scheduler_address, timeout=timeout)
        client.wait_for_workers(len(self.workers), timeout=timeout)
        return client

    # -- taking away -------------------------------------------------------------------
    def kill_worker(self, i: int, sig: int = signal.SIGKILL) -> None:
        process = self.workers.pop(i, None)
        if process is not None:
            _kill_group(process, sig)

    def remove_host(self, i: int) -> None:
        """Host i gone: its worker killed, its namespace and links deleted."""
        self.kill_worker(i)
        _ip("link", "del", f"bst{self.tag}v{i}", check=False)
        _ip("netns", "del", self.namespace(i), check=False)
        if i in self.made:
            self.made.remove(i)

    def cut(self, i: int, up: bool = False) -> None:
        """Host i cut off the network (its link down), or back on it (up=True)."""
        _ip("link", "set", f"bst{self.tag}v{i}", "up" if up else "down")

    def kill_scheduler(self) -> None:
        if self.scheduler is not None:
            _kill_group(self.scheduler, signal.SIGKILL)
            self.scheduler = None

    def close(self) -> None:
        for i in list(self.workers):
            self.kill_worker(i)
        self.kill_scheduler()
        for i in list(self.made):
            self.remove_host(i)
        _ip("link", "del", self.bridge, check=False)


def _kill_group(process: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


# -- run on the hosts' workers (by reference: this module is importable there) ----------
def whoami() -> tuple[str, str, list[str]]:
    """This worker's hostname, its host as the solver names it, its /dev/shm."""
    from bestemshe_dist.run import hostmem

    return socket.gethostname(), hostmem.host_id(), sorted(os.listdir("/dev/shm"))


def leave_mark(name: str) -> None:
    Path("/dev/shm", name).write_text("here")
