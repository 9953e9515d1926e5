"""The run log (`.bestemshe/runs.jsonl`): a solve run many times, each run's line
written as it goes; a run killed outright closed as lost by the next; the resume
line; what `status` says of the runs."""

import json
import os
import re
import signal

import pytest
from conftest import ended, run_cli
from resume_support import ARGS, CHUNK, PITS, STONES, same_files, solve_reference, start

from bestemshe_dist.data.store import Store
from bestemshe_dist.errors import StoreError, Terminated, first_line
from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.naming import RUN_LOG
from bestemshe_dist.run.driver import run_description
from bestemshe_dist.run.tasks import Job
from bestemshe_dist.watch import runlog
from bestemshe_dist.watch.runlog import RunLog, close_lost, format_runs, read_runs, resume_line

LAYERS = len(make_plan(Variant(STONES, PITS)).layers)


@pytest.fixture(scope="module")
def reference(client, tmp_path_factory):
    return solve_reference(client, tmp_path_factory.mktemp("reference"))


def runs_of(out):
    return [json.loads(line) for line in (out / RUN_LOG).read_text().splitlines()]


def wait_for_round(proc, pattern):
    for line in proc.stderr:
        if re.search(pattern, line):
            return
    raise AssertionError(f"the solve ended before a line matching {pattern!r}")


def test_a_run_killed_outright_is_closed_as_lost_and_the_next_says_what_it_resumed(tmp_path, reference):
    out = tmp_path / "tb"
    proc = start(out)
    wait_for_round(proc, r"pair-0-2 round 3 \(")
    # The line the killed run left: open, seen while it ran.
    first = runs_of(out)
    assert len(first) == 1 and first[0]["how"] == "running" and first[0]["ended"] is None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)

    done = run_cli(*ARGS, "--out", out)
    assert done.returncode == 0, done.stderr
    line = next(l for l in done.stderr.splitlines() if "resumed:" in l)
    m = re.search(
        r"resumed: (\d+) layers? published, .*pair-0-2 after round (\d+) "
        r"\(about \d+ s of work in flight redone\), rebuilt in [\d.]+ s",
        line,
    )
    assert m, line
    assert int(m.group(2)) >= 3

    runs = runs_of(out)
    assert [r["run"] for r in runs] == [1, 2]
    lost, finished = runs
    assert lost["how"] == "lost" and lost["ended"] == lost["last_seen"] >= lost["started"]
    assert finished["how"] == "finished" and finished["reason"] is None
    assert finished["resumed"]["layers_published"] == int(m.group(1))
    pair = next(p for p in finished["resumed"]["pairs"] if p["pair"] == "pair-0-2")
    assert pair["after_round"] == int(m.group(2)) and pair["rebuilt_seconds"] >= 0
    assert lost["layers_done"] + finished["layers_done"] == LAYERS
    assert finished["rounds_done"] > 0 and finished["peak"]["machine_used_bytes"] > 0
    assert finished["peak"]["worker_rss_bytes"] > 0
    assert finished["layers"] == LAYERS and finished["method"] == "counting"
    same_files(out, reference)

    status = run_cli("status", out)
    assert status.returncode == 0, status.stderr
    assert re.search(r"runs: 2 \(1 finished, 1 lost\), \dh\d\dm\d\ds of wall time in all", status.stdout)
    assert "   run 1: " in status.stdout and "   run 2: " in status.stdout
    data = json.loads(run_cli("status", out, "--json").stdout)
    assert data["runs_summary"]["runs"] == 2 and data["runs_summary"]["how"] == {"finished": 1, "lost": 1}


def test_a_terminated_run_says_so_and_a_fresh_solve_resumes_nothing(tmp_path, reference):
    out = tmp_path / "tb"
    proc = start(out)
    wait_for_round(proc, r"pair-0-2 round 1 \(")
    os.killpg(proc.pid, signal.SIGTERM)
    err = ended(proc, 60)
    assert proc.returncode == 143, err
    (first,) = runs_of(out)
    assert first["how"] == "terminated" and first["ended"] >= first["started"]
    assert first["resumed"] is None  # it started from nothing

    done = run_cli(*ARGS, "--out", out)
    assert done.returncode == 0, done.stderr
    assert "resumed: " in done.stderr
    runs = runs_of(out)
    assert [r["how"] for r in runs] == ["terminated", "finished"]
    same_files(out, reference)
    again = run_cli(*ARGS, "--out", out)  # everything published: resumes only layers
    assert f"resumed: {LAYERS} layers published, no pair in progress" in again.stderr
    assert [r["how"] for r in runs_of(out)] == ["terminated", "finished", "finished"]


def test_the_log_never_holds_credentials():
    job = Job("s3://user:s3cr3t-value@bucket/tb", Variant(STONES, PITS), storage_options={"secret": "x"})
    text = json.dumps(run_description(job, make_plan(Variant(STONES, PITS)), CHUNK))
    assert "s3cr3t-value" not in text and "s3://***@bucket/tb" in text
    assert "storage_options" not in text


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self):
        return self.now


def test_a_line_is_rewritten_at_most_every_beat_and_closed_at_its_end():
    store = Store("memory://runlog-beats")
    clock = Clock()
    log = RunLog(store, {"layers": 3}, clock=clock)
    with log:
        log.layer_done({"positions": 10})  # forced: a layer is news
        assert read_runs(store)[0]["layers_done"] == 1
        clock.now += 1
        log.round_done("pair-0-2", 0, "counting", 5, 5, 0.1)  # within the beat: kept in memory
        assert read_runs(store)[0]["rounds_done"] == 0
        clock.now += runlog.BEAT_SECONDS
        log.round_done("pair-0-2", 1, "counting", 5, 0, 0.1)
        assert read_runs(store)[0]["rounds_done"] == 2
        clock.now += 5
        log.failed("a worker died three times")
    (run,) = read_runs(store)
    assert run["how"] == "failed" and run["reason"] == "a worker died three times"
    assert run["seconds"] == pytest.approx(5 + 1 + runlog.BEAT_SECONDS, abs=0.01)
    assert run["ended"] == run["last_seen"]


@pytest.mark.parametrize(("stop", "how"), [(KeyboardInterrupt, "interrupted"), (Terminated, "terminated")])
def test_a_signal_is_named_as_such(stop, how):
    store = Store(f"memory://runlog-{how}")
    with pytest.raises(stop), RunLog(store, {}) as log:
        log.failed(first_line(stop()))  # as the driver reports it, before it re-raises
        raise stop()
    (run,) = read_runs(store)
    assert run["how"] == how and run["reason"] is None


def test_an_error_before_the_driver_reports_is_logged_too():
    store = Store("memory://runlog-early")
    with pytest.raises(StoreError), RunLog(store, {}):
        raise StoreError("the store went away.")
    (run,) = read_runs(store)
    assert run["how"] == "failed" and run["reason"] == "the store went away."


def test_a_store_that_refuses_writes_never_stops_the_solve():
    class Refusing(Store):
        def write_bytes(self, name, data):
            raise StoreError("no room")

    store = Refusing("memory://runlog-refusing")
    with RunLog(store, {}) as log:
        log.layer_done({"positions": 1})
        log.finished(None)
    assert not store.exists(RUN_LOG)


def test_lost_runs_resume_lines_and_status_lines():
    runs = [
        {"run": 1, "how": "running", "started": 100.0, "last_seen": 400.0, "ended": None},
        {"run": 2, "how": "finished", "started": 500.0, "ended": 600.0, "seconds": 100.0, "layers_done": 3},
        {"run": 3, "how": "broken"},  # a hand edit: still listed
    ]
    assert [r["run"] for r in close_lost(runs)] == [1]
    assert runs[0]["how"] == "lost" and runs[0]["ended"] == 400.0 and runs[0]["seconds"] == 300.0
    lines = format_runs(runs)
    assert lines[0].startswith(
        "runs: 3 (1 broken, 1 finished, 1 lost), 0h06m40s of wall time in all, 3 layers"
    )
    assert len(lines) == 4
    assert format_runs([]) == ["runs: none logged"]
    assert resume_line(2, []) == "resumed: 2 layers published, no pair in progress"
    assert (
        resume_line(
            1, [{"pair": "pair-0-2", "after_round": 4, "lost_seconds": 12.4, "rebuilt_seconds": 0.25}]
        )
        == "resumed: 1 layer published, pair-0-2 after round 4 (about 12 s of work in flight redone), "
        "rebuilt in 0.2 s"
    )
    assert (
        resume_line(3, [{"pair": "pair-0-4", "after_round": 9, "publishing": True, "lost_seconds": None}])
        == "resumed: 3 layers published, pair-0-4 after round 9 (its rounds over: publishing)"
    )
    assert runlog.lost_seconds({"last_seen": 50.0, "ended": None}, 40.0) == 10.0
    assert runlog.lost_seconds(None, 40.0) is None


def test_a_log_line_that_is_not_json_is_skipped():
    store = Store("memory://runlog-garbled")
    store.write_bytes(RUN_LOG, b'{"run": 1, "how": "finished"}\nnot json\n[1, 2]\n')
    assert read_runs(store) == [{"run": 1, "how": "finished"}]
    with RunLog(store, {}) as log:
        assert log.record["run"] == 2
        log.finished(None)
    assert [r["run"] for r in read_runs(store)] == [1, 2]
