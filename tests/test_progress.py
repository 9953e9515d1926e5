"""Progress reports: the CLI's bar and lines, and the dashboard plugin's state
built from the driver's events and task transitions (no cluster needed)."""

import io
import itertools

from conftest import run_cli

from bestemshe_dist.game.dag import make_plan, single_pair_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run.driver import SolveSummary
from bestemshe_dist.watch.dashboard import SolveState, render
from bestemshe_dist.watch.progress import ProgressView, plan_message

PLAN = make_plan(Variant(50, 5), 44)  # pairs 24-24, 22-24, 20-24, 22-22: 6 layers, 16,500 positions


def _entry(k1, k2, positions, win, draw, loss):
    return {
        "k1": k1,
        "k2": k2,
        "positions": positions,
        "counts": {"win": win, "draw": draw, "loss": loss},
        "rounds": 5,
        "solve_seconds": 0.25,
    }


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_terminal_bar_redrawn_under_the_log_lines():
    stream, clock = io.StringIO(), _Clock()
    view = ProgressView(stream, tty=True, clock=clock)
    view.log("starting")
    view.started(PLAN, {}, {"pair-20-24": 4})
    clock.now += 10
    view.layer_done(_entry(24, 24, 55, 10, 5, 40))
    view.round_done("pair-20-24", 0, "sweep", 3_000, 10_010 - 3_000, 0.1)
    view.log("a line")
    view.finished(None)
    text = stream.getvalue()
    assert text.startswith("[     0.0s] starting\n")
    bar = text.rsplit("\r\033[K", 1)[1]
    assert bar.startswith("[") and "1/6 layers, 3,055/16,500 positions, 306/s, ETA 0:44" in bar
    assert "\r\033[K[    10.0s] a line\n" in text  # the bar cleared, the line, the bar again
    assert text.endswith("\n")  # finished: the bar's line ended
    view.log("after")  # no bar after the end
    assert stream.getvalue().endswith("[    10.0s] after\n")


def test_plain_lines_when_not_a_terminal_and_nothing_when_quiet():
    stream, clock = io.StringIO(), _Clock()
    view = ProgressView(stream, tty=False, clock=clock, every=5)
    view.started(PLAN, {(24, 24): _entry(24, 24, 55, 10, 5, 40)}, {})
    clock.now += 1
    view.layer_done(_entry(22, 24, 715, 1, 2, 712))  # within 5 s of the last line: none
    clock.now += 5
    view.layer_done(_entry(24, 22, 715, 1, 2, 712))
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and len(lines) == 2
    assert (
        lines[0]
        == "[     0.0s] progress: [........................] 1/6 layers, 0/16,445 positions, 0/s, ETA ?"
    )
    assert (
        lines[1].startswith("[     6.0s] progress: [##") and "3/6 layers, 1,430/16,445 positions" in lines[1]
    )

    quiet = io.StringIO()
    view = ProgressView(quiet, tty=True, quiet=True)
    view.log("x")
    view.started(PLAN, {}, {})
    view.layer_done(_entry(24, 24, 55, 10, 5, 40))
    view.finished(SolveSummary(1, 0, 55, 1.0, 0.0, {}))
    assert quiet.getvalue() == ""


def test_dashboard_state_from_events_and_task_keys():
    state = SolveState()
    state.event(plan_message(PLAN, {(24, 24): _entry(24, 24, 55, 10, 5, 40)}, {"pair-20-24": 4}))
    snap = state.snapshot()
    assert snap["solve"] == "running" and snap["total_layers"] == 6
    assert snap["counts"] == {"pending": 5, "running": 0, "done": 1, "failed": 0}

    tag = "-0123abcd"  # every solve task key ends with its run's tag
    state.transition("pair-22-24" + tag, "waiting", "processing")  # a small pair
    state.transition("pair-20-24/round-0/chunk-1" + tag, "waiting", "processing")
    state.transition("pair-20-24/round-0/chunk-1" + tag, "processing", "memory")
    state.transition("layer-22-22" + tag, "waiting", "processing")
    state.transition("layer-22-22" + tag, "processing", "erred")
    state.transition("check-24-24" + tag, "waiting", "processing")  # not a solve task: ignored
    state.transition(("tuple", 1), "waiting", "processing")
    state.event(
        {
            "event": "round",
            "pair": "pair-20-24",
            "round": 0,
            "mode": "sweep",
            "decided": 3_000,
            "undecided": 7_000,
            "seconds": 0.1,
        }
    )
    snap = state.snapshot()
    by = {r["layer"]: r["state"] for r in snap["layers"]}
    assert by == {
        "24_24": "done",
        "22_24": "running",
        "24_22": "running",
        "20_24": "running",
        "24_20": "running",
        "22_22": "failed",
    }
    pair = next(p for p in snap["pairs_in_progress"] if p["pair"] == "pair-20-24")
    assert pair["round"] == 1 and pair["chunks"] == 4 and pair["chunks_done"] == 0
    assert pair["chunk_tasks"] == 0
    # a frontier round runs only the chunks with sources: done of the tasks it has
    state.transition("pair-20-24/round-1/chunk-3" + tag, "released", "waiting")
    state.transition("pair-20-24/round-1/chunk-2" + tag, "waiting", "processing")
    state.transition("pair-20-24/round-1/chunk-2" + tag, "processing", "memory")
    pair = next(p for p in state.snapshot()["pairs_in_progress"] if p["pair"] == "pair-20-24")
    assert pair["chunks_done"] == 1 and pair["chunk_tasks"] == 2 and pair["chunks"] == 4
    assert ">1/2<" in render(state.snapshot())
    assert snap["rounds_total"] == 1 and snap["positions_decided"] == 55 + 3_010

    state.transition("pair-22-24" + tag, "processing", "memory")
    state.event(
        {
            "event": "layer",
            "layer": "22_24",
            "k1": 22,
            "k2": 24,
            "positions": 715,
            "counts": {"win": 700, "draw": 0, "loss": 15},
            "rounds": 1,
            "seconds": 0.5,
        }
    )
    snap = state.snapshot()
    by = {r["layer"]: r["state"] for r in snap["layers"]}
    assert by["22_24"] == "done" and by["24_22"] == "pending"
    html = render(snap)
    assert 'data-layer="22_24" data-state="done"' in html and "W 98% D 0%<br>L 2%" in html
    assert 'data-layer="22_22" data-state="failed"' in html
    assert 'data-pair="pair-20-24"' in html and "0: 3,000" in html

    state.event({"event": "finished", "seconds": 1.0, "positions": 16_500})
    assert state.snapshot()["solve"] == "finished"
    state.event(plan_message(PLAN, {}, {}))  # the next solve starts afresh
    assert state.snapshot()["counts"]["done"] == 0


def test_solve_without_dashboard_and_plain_lines(tmp_path):
    done = run_cli(
        "solve",
        "--stones",
        6,
        "--pits",
        1,
        "--workers",
        1,
        "--out",
        tmp_path / "tb",
        "--dashboard-address",
        "none",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert all(line.startswith("[") for line in lines), done.stderr  # timestamped, no bar
    assert "/bestemshe" not in done.stderr and "dashboard http" not in done.stderr
    assert any("] progress: [" in line and "layers" in line and "ETA" in line for line in lines)


def test_layers_outside_the_plan_are_not_counted_done():
    """A --pair solve's folder holds its dependencies: they are not layers of its plan."""
    stream = io.StringIO()
    view = ProgressView(stream, tty=False, clock=_Clock())
    plan = single_pair_plan(Variant(50, 5), 22, 22)
    view.started(
        plan, {(24, 24): _entry(24, 24, 55, 10, 5, 40), (22, 24): _entry(22, 24, 715, 1, 2, 712)}, {}
    )
    assert "] 0/1 layers, 0/" in stream.getvalue()


def test_a_pair_half_published_counts_each_position_once():
    """A pair's rounds are over once one of its layers is published: its other
    layer counts whole (its undecided positions are draws) and the first one
    only once, so the figure never passes the total nor goes back."""
    stream, events = io.StringIO(), []
    view, state = ProgressView(stream, tty=False, clock=_Clock()), SolveState()
    view.started(PLAN, {}, {"pair-20-24": 4})
    state.event(plan_message(PLAN, {}, {"pair-20-24": 4}))

    def seen():
        events.append((view.decided, state.positions_decided()))

    for round_, undecided in enumerate((7_000, 2_000, 120)):
        message = {"pair": "pair-20-24", "round": round_, "mode": "counting", "undecided": undecided}
        view.round_done("pair-20-24", round_, "counting", 0, undecided, 0.1)
        state.event({"event": "round", "decided": 0, "seconds": 0.1, **message})
        seen()
    for k1, k2 in ((20, 24), (24, 20)):  # 5,005 positions each, 60 drawn
        entry = _entry(k1, k2, 5_005, 4_000, 60, 945)
        view.layer_done(entry)
        state.event({"event": "layer", "layer": f"{k1}_{k2}", **entry, "seconds": 0.5})
        seen()
    assert events[2] == (10_010 - 120,) * 2
    assert events[3] == events[4] == (10_010,) * 2  # half published: the other layer is decided whole
    for view_figures in zip(*events):  # the bar's, then the dashboard's
        assert all(a <= b for a, b in itertools.pairwise(view_figures)), events
