"""Crashes cost at most a round: SIGKILL the driver (mid-round, between rounds,
during publication) or a worker (mid-round); running the same command again
ends with the same files as an uninterrupted solve."""

import os
import re
import signal
import time
from pathlib import Path

import pytest
from conftest import ended, run_cli
from resume_support import ARGS, CHUNK, PITS, STONES, same_files, solve_reference, start

from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.tasks import Job


@pytest.fixture(scope="module")
def reference(client, tmp_path_factory):
    return solve_reference(client, tmp_path_factory.mktemp("reference"))


def kill_group(proc):
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def wait_for(predicate, proc, timeout=120):
    deadline = time.time() + timeout
    while not predicate():
        assert proc.poll() is None, "the solve ended before the crash point"
        assert time.time() < deadline, "crash point never reached"
        time.sleep(0.001)


def rerun(out):
    done = run_cli(*ARGS, "--out", out)
    assert done.returncode == 0, done.stderr
    return done.stderr


def round_dir(out, pair, r):
    return out / ".bestemshe" / "pairs" / pair / f"round-{r:05d}"


def test_driver_killed_mid_round(tmp_path, reference):
    out = tmp_path / "tb"
    proc = start(out)
    # Some chunk of round 4 has written its checkpoint, the round is not complete.
    d = round_dir(out, "pair-0-2", 4)
    wait_for(lambda: any(d.glob("*.delta")) and not (d / "complete.json").exists(), proc)
    kill_group(proc)
    log = rerun(out)
    assert "pair-0-2: resuming after round 3" in log
    same_files(out, reference)


def test_driver_killed_between_rounds(tmp_path, reference):
    out = tmp_path / "tb"
    proc = start(out)
    for line in proc.stderr:
        if re.search(r"pair-0-0 round 2 \(", line):
            break
    kill_group(proc)
    log = rerun(out)
    assert re.search(r"pair-0-0: resuming after round [2-9]", log)
    same_files(out, reference)


def test_driver_killed_during_publication(tmp_path, reference):
    out = tmp_path / "tb"
    proc = start(out)
    parts = out / ".bestemshe" / "pairs" / "pair-0-0" / "publish"
    wait_for(lambda: parts.exists() and any(parts.glob("*.part-*")), proc)
    kill_group(proc)
    log = rerun(out)
    assert "pair-0-0: publishing" in log
    same_files(out, reference)


def _workers_of(proc):
    """PIDs of the worker processes of a local cluster started by proc."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == proc.pid:
            continue
        try:
            if os.getsid(int(entry.name)) != proc.pid:
                continue
            cmd = (entry / "cmdline").read_bytes()
        except (OSError, ProcessLookupError):
            continue
        if b"multiprocessing" in cmd or b"spawn_main" in cmd:
            pids.append(int(entry.name))
    return pids


def test_worker_killed_mid_round(tmp_path, reference):
    out = tmp_path / "tb"
    proc = start(out)
    d = round_dir(out, "pair-0-2", 3)
    wait_for(lambda: any(d.glob("*.delta")) and not (d / "complete.json").exists(), proc)
    workers = _workers_of(proc)
    assert workers, "no worker process found"
    os.kill(max(workers), signal.SIGKILL)
    err = ended(proc, 300)
    assert proc.returncode == 0, err
    same_files(out, reference)


def test_two_runs_on_one_output_refuse(tmp_path, reference):
    out = tmp_path / "tb"
    proc = start(out)
    try:
        wait_for(lambda: (out / ".bestemshe" / "lease.json").exists(), proc)
        time.sleep(0.5)
        second = run_cli(*ARGS, "--out", out)
        assert second.returncode == 1
        assert "another solve" in second.stderr and "is writing to" in second.stderr
        err = ended(proc, 300)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            kill_group(proc)
    same_files(out, reference)
    assert not (out / ".bestemshe" / "lease.json").exists()


def test_restart_discards_checkpoints(tmp_path, reference):
    out = tmp_path / "tb"
    proc = start(out)
    d = round_dir(out, "pair-0-2", 3)
    wait_for(lambda: (d / "complete.json").exists(), proc)
    kill_group(proc)
    done = run_cli(*ARGS, "--restart", "--out", out)
    assert done.returncode == 0, done.stderr
    assert "checkpoints discarded (--restart)" in done.stderr
    assert "resuming" not in done.stderr
    assert "pair-0-2 round 0 (" in done.stderr
    same_files(out, reference)


class _Stop(Exception):
    pass


def test_a_failed_solve_leaves_no_task_behind_on_its_cluster(client, tmp_path, reference):
    """Task keys carry their run (pair-a-b/round-r/chunk-c-<run>), so a solve on the same cluster
    right after a failed one must not find that solve's tasks still in flight."""
    from bestemshe_dist.watch.progress import Progress

    class StopAfter(Progress):
        def round_done(self, pair_key, round_, *args):
            if pair_key == "pair-0-4" and round_ == 0:  # while pair 2-2 runs its rounds
                raise _Stop("stopped for the test")

    variant = Variant(STONES, PITS)
    with pytest.raises(_Stop):
        solve(
            client,
            Job(str(tmp_path / "failed"), variant),
            make_plan(variant),
            chunk_size=CHUNK,
            progress=StopAfter(),
        )
    # Every pair thread has ended (its round tasks cancelled or finished) ...
    import threading

    assert not [t.name for t in threading.enumerate() if t.name.startswith("bestemshe-pair")]
    # ... so a solve on the same cluster computes its own rounds.
    out = tmp_path / "again"
    solve(client, Job(str(out), variant), make_plan(variant), chunk_size=CHUNK)
    same_files(out, reference)


@pytest.mark.parametrize("chunk", [CHUNK, 10**9], ids=["large-pair", "small-pair"])
def test_a_pair_with_one_layer_published_publishes_only_the_other(tmp_path, reference, chunk):
    """A crash between the two layers of a pair: the run after it solves the pair
    again but publishes and counts only the layer that is missing."""
    import json
    import shutil

    out = tmp_path / "tb"
    shutil.copytree(reference, out)
    for name in ("layer_2_0_win.bin", "layer_2_0_draw.bin", "layer_2_0.sums.json"):
        (out / name).unlink()
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["layers"]["2_0"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    kept = (out / "layer_0_2_win.bin").stat().st_mtime_ns
    args = [a if a != CHUNK else chunk for a in ARGS]
    done = run_cli(*args, "--out", out)
    assert done.returncode == 0, done.stderr
    assert re.findall(r"layer (\d+_\d+) done", done.stderr) == ["2_0"]
    assert "done: 1 layer solved" in done.stderr
    assert (out / "layer_0_2_win.bin").stat().st_mtime_ns == kept
    same_files(out, reference)
