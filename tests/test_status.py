"""`bestemshe-dist status`: the grid and totals of a finished solve and of an
interrupted one (checkpointed rounds of a pair in progress)."""

import json
import logging
import time

import pytest
from conftest import run_cli

from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.tasks import Job
from bestemshe_dist.watch.progress import Progress
from bestemshe_dist.watch.status import tablebase_status


def test_status_of_a_finished_endgame_solve(tmp_path):
    out = tmp_path / "tb"
    done = run_cli(
        "solve",
        "--stones",
        50,
        "--min-captured",
        44,
        "--workers",
        1,
        "--out",
        out,
        "--dashboard-address",
        "none",
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # --quiet: no bar, no lines, no dashboard link

    status = run_cli("status", out)
    assert status.returncode == 0, status.stderr
    text = status.stdout
    assert "50 stones, 5 pits per side, layers with k1 + k2 >= 44" in text
    assert "layers done: 6 of 6 (finished)" in text
    assert "positions: 16,500 of 16,500 published" in text
    assert "in progress: no pair" in text and "lease" not in text
    grid = text.split("k1\\k2", 1)[1].split("\n\n", 1)[0].splitlines()
    assert grid[0].split() == ["20", "22", "24"]
    assert [row.split() for row in grid[1:]] == [["20", "#"], ["22", "#", "#"], ["24", "#", "#", "#"]]

    manifest = json.loads((out / "manifest.json").read_text())
    data = json.loads(run_cli("status", out, "--json").stdout)
    assert data["finished"] and data["layers_done"] == data["layers_total"] == 6
    assert {r["layer"]: r["state"] for r in data["layers"]} == dict.fromkeys(manifest["layers"], "done")
    for kind in ("win", "draw", "loss"):
        assert data["counts"][kind] == sum(e["counts"][kind] for e in manifest["layers"].values())
    assert data["pairs_in_progress"] == []

    # Every k1 + k2 is even, so a record with an odd scope (as an older solve could
    # write) is reported as the layers it solved.
    record = out / ".bestemshe" / "solve.json"
    record.write_text(json.dumps({**json.loads(record.read_text()), "min_captured": 43}))
    status = run_cli("status", out)
    assert status.returncode == 0, status.stderr
    assert "layers with k1 + k2 >= 44" in status.stdout and "layers done: 6 of 6 (finished)" in status.stdout


class _Interrupt(Exception):
    pass


class _StopAfter(Progress):
    """Stops the solve as a crash would, once `pair` has checkpointed round `round_`."""

    def __init__(self, pair, round_):
        self.pair, self.round_ = pair, round_

    def round_done(self, pair_key, round_, *args):
        if pair_key == self.pair and round_ == self.round_:
            raise _Interrupt("stopped for the test")


def test_status_of_an_interrupted_solve(tmp_path):
    from distributed import Client, LocalCluster

    out = tmp_path / "tb"
    variant = Variant(12, 3)
    plan = make_plan(variant)
    # A cluster of its own: the abandoned solve's tasks (same keys as any other
    # solve's) must not outlive the test in the session's cluster.
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=False,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        with pytest.raises(_Interrupt):
            solve(client, Job(str(out), variant), plan, chunk_size=150, progress=_StopAfter("pair-0-2", 2))
        time.sleep(0.5)  # let the other pairs' threads see the stop and end their round

    manifest = json.loads((out / "manifest.json").read_text())["layers"]
    status = tablebase_status(str(out))
    assert not status["finished"] and status["lease"] is None
    assert status["layers_total"] == len(plan.layers)
    states = {r["layer"]: r["state"] for r in status["layers"]}
    assert {k for k, s in states.items() if s == "done"} == set(manifest)
    assert states["0_2"] == states["2_0"] == "running"
    assert status["layers_done"] == len(manifest) < len(plan.layers)
    pair = next(p for p in status["pairs_in_progress"] if p["pair"] == "pair-0-2")
    assert pair["rounds_done"] >= 3 and pair["last_round"]["round"] == pair["rounds_done"] - 1
    assert pair["last_round"]["decided"] > 0

    done = run_cli("status", out)
    assert done.returncode == 0, done.stderr
    assert f"layers done: {len(manifest)} of {len(plan.layers)}\n" in done.stdout
    assert "in progress: pair-0-2 (layers 0_2 2_0), " in done.stdout
    assert "rounds checkpointed; last round " in done.stdout
    assert " R " in done.stdout or done.stdout.count("R") >= 2


def test_status_of_a_folder_without_manifest_is_one_sentence(tmp_path):
    done = run_cli("status", tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"bestemshe-dist status: {tmp_path} holds no tablebase: no manifest.json and no "
        "layer_<k1>_<k2>_win.bin files are there."
    ]


def test_status_never_says_a_dead_process_holds_the_lease(tmp_path):
    import os
    import socket
    import subprocess

    out = tmp_path / "tb"
    assert run_cli("solve", "--stones", "6", "--pits", "1", "--out", out, "--workers", "1").returncode == 0
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no process has now
    lease = out / ".bestemshe" / "lease.json"
    lease.parent.mkdir(exist_ok=True)
    host = socket.gethostname()
    cases = [
        (
            {"token": "x", "host": host, "pid": gone.pid, "renewed": time.time()},
            False,
            f"process {gone.pid} on this host is gone",
        ),
        (
            {"token": "x", "host": "elsewhere", "pid": 12345, "renewed": time.time() - 600},
            False,
            "it was last renewed 60",
        ),
        ({"token": "x", "host": host, "pid": os.getpid(), "renewed": time.time()}, True, None),
    ]
    for record, held, reason in cases:
        lease.write_text(json.dumps(record))
        status = tablebase_status(str(out))
        assert status["lease"]["held"] is held and (
            reason is None or reason in status["lease"]["stale_reason"]
        )
        text = run_cli("status", out).stdout
        if held:
            assert f"a solve holds the lease: host {host}, pid {os.getpid()}" in text
        else:
            assert "a solve holds the lease" not in text
            assert f"no solve is running: the lease left by pid {record['pid']}" in text and reason in text
