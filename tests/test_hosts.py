"""Solves across separate hosts: each a Linux namespace with its own address,
hostname and /dev/shm, running one Dask worker (hosts_support.py). A solve
spread over them writes the same files as one on a single host."""

import os
import re
import socket
import subprocess

import pytest
from conftest import FIXTURE_M40
from distributed import get_task_stream
from hosts_support import leave_mark, whoami

from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run import driver as run_driver
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.tasks import Job


def leftovers(tag):
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return [line for line in (names + links).splitlines() if tag in line]


def test_each_host_has_its_own_address_hostname_and_shared_memory(make_hosts):
    hosts = make_hosts(2)
    with hosts.client() as client:
        seen = client.run(whoami)
        addresses = sorted(a.split("//")[1].rsplit(":", 1)[0] for a in seen)
        assert addresses == [hosts.host_address(0), hosts.host_address(1)]
        names = sorted(name for name, _, _ in seen.values())
        assert names == [hosts.hostname(0), hosts.hostname(1)] and socket.gethostname() not in names
        assert len({host for _, host, _ in seen.values()}) == 2  # two hosts to the solver
        mark = f"bestemshe-test-{hosts.tag}"
        first = next(a for a in seen if hosts.host_address(0) in a)
        client.run(leave_mark, mark, workers=[first])
        after = client.run(whoami)
        assert [a for a, (_, _, shm) in after.items() if mark in shm] == [first]
        assert not os.path.exists(f"/dev/shm/{mark}")  # nor in this machine's own
    hosts.close()
    assert leftovers(hosts.tag) == []


@pytest.mark.parametrize("method", ["counting", "frontier"])
def test_a_solve_across_three_hosts_writes_the_published_files(make_hosts, tmp_path, monkeypatch, method):
    """The 50-stone layers with k1 + k2 >= 40, chunked small enough that every pair
    runs as a large one (rounds of chunk tasks, host arrays), over three hosts.
    By frontier rounds, each pair is on every host that runs its tasks: the round
    markers (the checkpoints, read here as they are written) show each host built
    its copy once, read each round's checkpoint once, and wrote decisions out."""
    markers = {}
    written = run_driver.write_json

    def keep(store, name, value):
        if name.endswith("/complete.json"):  # naming.round_marker
            markers.setdefault(name.split("/round-")[0], []).append(value)
        return written(store, name, value)

    monkeypatch.setattr(run_driver, "write_json", keep)
    hosts = make_hosts(3)
    variant = Variant(50, 5)
    out = tmp_path / "out"
    lines = []
    with hosts.client() as client, get_task_stream(client) as stream:
        solve(
            client,
            Job(str(out), variant, method=method),
            make_plan(variant, 40),
            lines.append,
            chunk_size=20_000,
        )
    workers = {t["worker"] for t in stream.data}
    published = sorted(p.name for p in FIXTURE_M40.glob("*.bin"))
    assert sorted(p.name for p in out.glob("*.bin")) == published
    for name in published:
        assert (out / name).read_bytes() == (FIXTURE_M40 / name).read_bytes(), name
    assert len(workers) == 3  # every host took work
    # pairs solved as large ones: rounds of chunk tasks, arrays on the hosts
    assert any(re.search(rf"round \d+ \({method}, [2-9] chunks", line) for line in lines), lines
    if method == "frontier":
        assert_each_host_built_once_read_each_round_once(markers)


def assert_each_host_built_once_read_each_round_once(markers):
    flushed, spread = set(), 0
    assert len(markers) == 5  # the pairs of k1 + k2 = 40 and 42, larger than a chunk
    for key, rounds in markers.items():
        rounds.sort(key=lambda m: m["round"])
        assert [m["round"] for m in rounds] == list(range(len(rounds))), key
        built, read, ran = [], {}, set()
        for m in rounds:
            hosts = m["hosts"]
            built += hosts["built"]
            ran |= set(hosts["ran"])
            assert set(hosts["built"]) <= set(hosts["ran"])
            for host, applied in hosts["synced"].items():
                read.setdefault(host, []).extend(applied)
            for host in hosts["ran"]:  # its copy holds every round before this one
                assert sorted(read.get(host, [])) == list(range(m["round"])), (key, m["round"], host)
            flushed |= set(hosts["flushed"])
        assert sorted(built) == sorted(ran), (key, built)  # built once on each host it ran on
        spread = max(spread, len(ran))
        for host, applied in read.items():
            assert len(applied) == len(set(applied)), (key, host, applied)  # each round read once
    assert len(flushed) == 3  # flushes ran on every host
    assert spread == 3  # a pair on all three
