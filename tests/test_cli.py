"""The command line: usage errors are one line and exit 2, failures exit 1."""

import json
import re

import pytest
from conftest import ended, run_cli


@pytest.mark.parametrize(
    "args,needle",
    [
        (["solve", "--stones", "13", "--out", "x"], "--stones must be an even number"),
        (["solve", "--pits", "0", "--out", "x"], "--pits must be from 1 to 5"),
        (["solve", "--min-captured", "99", "--out", "x"], "--min-captured must be from 0 to 48"),
        (["solve", "--storage-options", "{nope", "--out", "x"], "--storage-options is not valid JSON"),
        (["solve", "--storage-options", "[1]", "--out", "x"], "must be a JSON object"),
        (["solve", "--stones", "50"], "--out"),
        (["solve", "--stones", "ten", "--out", "x"], "invalid int value"),
        (["plan", "--pits", "6"], "--pits must be from 1 to 5"),
        (
            ["plan", "--min-captured", "37"],
            "--min-captured must be even, not 37: every layer's k1 + k2 is even",
        ),
        (["verify", "x", "--seed", "-1"], "argument --seed: must be at least 0, not -1"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_usage_errors_are_one_line_exit_2(args, needle):
    done = run_cli(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert needle in lines[0]


def test_plan_lists_pairs_sizes_and_dependencies():
    done = run_cli("plan", "--stones", "50", "--min-captured", "40")
    assert done.returncode == 0
    out = done.stdout
    assert "9 pairs, 15 layers, 575,630 positions" in out
    assert "pair-16-24" in out and "24_18 24_20 24_22 24_24" in out
    full = run_cli("plan").stdout
    assert "91 pairs, 169 layers, 125,698,242,527 positions" in full
    assert full.strip().splitlines()[-1].split()[:4] == ["0", "pair-0-0", "12,565,671,261", "12,565,671,261"]


def test_output_of_another_variant_is_refused(tmp_path):
    out = tmp_path / "tb"
    assert run_cli("solve", "--stones", "6", "--pits", "1", "--out", out, "--workers", "1").returncode == 0
    before = (out / "manifest.json").read_bytes()
    done = run_cli("solve", "--stones", "8", "--pits", "1", "--out", out, "--workers", "1")
    assert done.returncode == 1
    errors = [l for l in done.stderr.strip().splitlines() if not l.startswith("[")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr  # progress lines, one error
    assert "holds a tablebase of" in errors[0] and "choose another --out" in errors[0]
    assert (out / "manifest.json").read_bytes() == before


def test_output_under_a_file_is_one_sentence_before_anything_starts(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    done = run_cli("solve", "--stones", "6", "--pits", "1", "--out", blocker / "tb", "--workers", "1")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"bestemshe-dist solve: --out {blocker / 'tb'} lies under the file "
        f"{blocker}, not a folder: give a folder (it is created when missing) "
        "or an fsspec URL."
    ]


def test_corrupt_manifest_is_refused(tmp_path):
    out = tmp_path / "tb"
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps({"hello": 1}))
    done = run_cli("solve", "--stones", "6", "--pits", "1", "--out", out, "--workers", "1")
    assert done.returncode == 1
    assert "is not a bestemshe manifest" in done.stderr


# -- every bad argument stops everything before it starts -------------------------------------
BAD_SOLVE = [
    (["--chunk-size", "0"], "argument --chunk-size: must be at least 1, not 0"),
    (["--chunk-size", "-5"], "argument --chunk-size: must be at least 1, not -5"),
    (["--chunk-size", "many"], "argument --chunk-size: 'many' is not a whole number"),
    (["--workers", "0"], "argument --workers: must be at least 1, not 0"),
    (["--threads-per-worker", "0"], "argument --threads-per-worker: must be at least 1, not 0"),
    (["--min-captured", "-2"], "argument --min-captured: must be at least 0, not -2"),
    (["--min-captured", "99"], "--min-captured must be from 0 to 48"),
    (["--min-captured", "37"], "--min-captured must be even, not 37"),
    (["--stones", "13"], "--stones must be an even number"),
    (["--dashboard-address", "nowhere"], "argument --dashboard-address: 'nowhere' is not HOST:PORT"),
    (["--storage-options", "[1]"], "--storage-options must be a JSON object"),
    (["--config", "no-such-config.yaml"], "cannot read the config no-such-config.yaml"),
    (["--method", "guess"], "argument --method: invalid choice"),
    (["--out", "FILE"], "is a file, not a folder"),
]


@pytest.mark.parametrize("args,needle", BAD_SOLVE, ids=[" ".join(a) for a, _ in BAD_SOLVE])
def test_bad_solve_arguments_write_nothing_and_start_nothing(tmp_path, monkeypatch, capsys, args, needle):
    out = tmp_path / "out"
    blocker = tmp_path / "a-file"
    blocker.write_text("keep me")
    args = [str(blocker) if a == "FILE" else a for a in args]
    full = ["solve", "--min-captured", "44", *args] + ([] if "--out" in args else ["--out", str(out)])

    done = run_cli(*full)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.splitlines() == [done.stderr.strip()] and needle in done.stderr, done.stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
    assert blocker.read_text() == "keep me"

    # In this process, with the one place that starts a cluster made to fail the test.
    from bestemshe_dist import cli

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr("bestemshe_dist.cluster.connect", no_cluster)
    monkeypatch.setattr("bestemshe_dist.watch.logs.route_library_logs", lambda command: None)
    with pytest.raises(SystemExit) as code:
        rc = cli.main(full)
        raise SystemExit(rc)
    assert code.value.code == 2 and not out.exists()
    capsys.readouterr()


def test_options_may_come_anywhere(tmp_path):
    from conftest import FIXTURE_M40

    for args in (
        ["probe", FIXTURE_M40, "--json", "20", "20", *["1"] * 10],
        ["probe", "--json", FIXTURE_M40, "20", "20", *["1"] * 5, "--json", *["1"] * 5],
        ["probe", FIXTURE_M40, "20", "20", *["1"] * 10, "--json"],
    ):
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["category"] == "loss"
    done = run_cli("plan", "--min-captured", "44", "--stones", "50")
    assert done.returncode == 0 and "6 layers" in done.stdout


def test_version_and_the_list_of_commands():
    from bestemshe_dist import __version__

    done = run_cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"bestemshe-dist {__version__}"
    done = run_cli()
    assert done.returncode == 0 and done.stderr == ""
    for command in ("solve", "plan", "probe", "play", "verify", "status", "checksums"):
        assert f"    {command}" in done.stdout, done.stdout


def test_ctrl_c_is_one_line(tmp_path):
    """Ctrl-C reaches the whole process group (driver and local workers): one line,
    exit 130, no traceback from any process, and the rerun resumes."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    out = tmp_path / "tb"
    env = dict(os.environ, BESTEMSHE_LOG_DIR=str(tmp_path / "logs"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bestemshe_dist",
            "solve",
            "--min-captured",
            "30",
            "--workers",
            "2",
            "--out",
            str(out),
            "--dashboard-address",
            "none",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
        # as from a terminal: a suite started in the background
        # (`cmd &` in a script) passes SIGINT on ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 120
    while (
        not (out / "manifest.json").exists()
        or len(json.loads((out / "manifest.json").read_text())["layers"]) < 10
    ):
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    stderr = ended(proc, 120)
    assert proc.returncode == 130, stderr
    lines = [l for l in stderr.splitlines() if not l.startswith("[")]  # the progress lines
    assert lines == ["bestemshe-dist solve: interrupted; run the same command again to resume"], stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    done = run_cli(
        "solve",
        "--min-captured",
        "30",
        "--workers",
        "2",
        "--out",
        out,
        "--dashboard-address",
        "none",
        timeout=600,
    )
    assert done.returncode == 0 and "layers already published, skipped" in done.stderr, done.stderr


# After Ctrl-C, what a line may be that the solve wrote before the signal landed
# but the test read after: a round, a layer, a publish, a progress line. A failed
# flush or a round run again is none of them.
_BEFORE_THE_SIGNAL = re.compile(
    r"^\[\s*[\d.]+s\] (progress: |layer \d+_\d+ done |pair-\d+-\d+ round \d+ \(|pair-\d+-\d+: publishing )"
)


def test_ctrl_c_in_a_pairs_rounds_is_one_line_and_runs_nothing_again(tmp_path):
    """Ctrl-C while pairs are in their rounds (chunks of 1,000,000 positions: the
    pairs of 2,042,975 positions a layer and more go in rounds, from about 5 s of an
    80 s solve): the tasks the interrupt cancels are no failed flushes to run again,
    so the interrupt's line is the only one it adds, and the exit is 130."""
    import os
    import queue
    import signal
    import subprocess
    import sys
    import threading
    import time

    from conftest import ROOT

    out = tmp_path / "tb"
    env = dict(os.environ, BESTEMSHE_LOG_DIR=str(tmp_path / "logs"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bestemshe_dist",
            "solve",
            "--stones",
            "50",
            "--min-captured",
            "30",
            "--chunk-size",
            "1000000",
            "--workers",
            "2",
            "--out",
            str(out),
            "--dashboard-address",
            "none",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as test_ctrl_c_is_one_line
    )
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(l.rstrip("\n")) for l in proc.stderr], daemon=True)
    reader.start()
    before, in_rounds = [], re.compile(r"pair-\d+-\d+ round [3-9] \(")
    deadline = time.time() + 240
    while not (before and in_rounds.search(before[-1])):
        try:
            before.append(lines.get(timeout=max(0.1, deadline - time.time())))
        except queue.Empty:
            proc.kill()
            raise AssertionError(f"no pair reached its 3rd round in 240 s: {before}") from None
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C in a terminal: the driver and its local workers
    assert proc.wait(120) == 130
    reader.join(30)
    after = list(lines.queue)
    assert after and after[-1] == "bestemshe-dist solve: interrupted; run the same command again to resume", (
        after
    )
    assert all(_BEFORE_THE_SIGNAL.match(l) for l in after[:-1]), after
    assert proc.stdout.read() == ""
    assert any(l.endswith("kernels ready on 2 workers in " + l.rsplit(" in ", 1)[-1]) for l in before), before


def test_sigterm_stops_a_solve_as_ctrl_c_does_and_frees_its_host_memory(tmp_path):
    """`kill` (or SLURM's scancel, a container's stop) sends SIGTERM to the driver
    alone: one line, exit 143, no traceback, and the shared-memory arrays of the
    chunked pair it was solving are gone (they used to stay in /dev/shm)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    out, shm = tmp_path / "tb", tmp_path / "shm"
    env = dict(os.environ, BESTEMSHE_LOG_DIR=str(tmp_path / "logs"), BESTEMSHE_HOST_MEMORY=str(shm))
    # chunks of 2,000 positions: the pairs of 4,000 positions and more are solved in rounds
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bestemshe_dist",
            "solve",
            "--min-captured",
            "30",
            "--workers",
            "2",
            "--chunk-size",
            "2000",
            "--out",
            str(out),
            "--dashboard-address",
            "none",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    deadline = time.time() + 180
    while not any(shm.glob("bestemshe-*/solve-*/*")):  # a chunked pair's arrays are in place
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    stderr = ended(proc, 120)
    assert proc.returncode == 143, stderr
    lines = [l for l in stderr.splitlines() if not l.startswith("[")]  # the progress lines
    assert lines == ["bestemshe-dist solve: terminated; run the same command again to resume"], stderr
    assert "Traceback" not in stderr
    assert not list(shm.glob("bestemshe-*/solve-*")), list(shm.rglob("*"))


def test_library_messages_go_to_the_log_file_not_the_terminal(tmp_path):
    """What the dashboard's websockets and distributed log (tracebacks of browsers
    that went away, worker events) lands in the log file, not among the progress."""
    import os
    import subprocess
    import sys

    script = (
        "import logging, sys\n"
        "from bestemshe_dist.watch.logs import route_library_logs\n"
        "path = route_library_logs('solve')\n"
        "from distributed import LocalCluster\n"
        "with LocalCluster(n_workers=1, processes=False, dashboard_address=':0'):\n"
        "    pass\n"
        "logging.getLogger('tornado.application').error('Uncaught exception in websocket')\n"
        "logging.getLogger('bokeh.server.views.ws').error('WebSocket connection closed')\n"
        "logging.getLogger('distributed.core').error('Exception while handling op')\n"
        "logging.getLogger('distributed.client').error('Traceback of a lost scheduler')\n"
        "print(path)\n"
    )
    env = dict(os.environ, BESTEMSHE_LOG_DIR=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    text = open(done.stdout.strip()).read()
    for needle in (
        "Uncaught exception in websocket",
        "WebSocket connection closed",
        "Exception while handling op",
        "Traceback of a lost scheduler",
    ):
        assert needle in text


def _plan_of(tmp_path, config_text, *flags):
    """The plan `solve` would run for a config and flags (no cluster, nothing written)."""
    from bestemshe_dist import cli
    from bestemshe_dist.cli import solving
    from bestemshe_dist.cluster import load_config
    from bestemshe_dist.game.variant import Variant

    path = tmp_path / "config.yaml"
    path.write_text(config_text)
    args = cli.parse(["solve", "--config", str(path), "--out", str(tmp_path / "tb"), *flags])
    return solving.solve_plan(args, Variant(args.stones, args.pits), load_config(path))


def test_config_min_captured_sets_the_scope_and_the_flag_wins(tmp_path):
    assert _plan_of(tmp_path, "min-captured: 44\n").min_captured == 44
    assert len(_plan_of(tmp_path, "min_captured: 44\n").layers) == 6
    assert _plan_of(tmp_path, "min-captured: 44\n", "--min-captured", "46").min_captured == 46
    assert _plan_of(tmp_path, "min-captured: 44\n", "--min-captured", "0").min_captured == 0
    assert _plan_of(tmp_path, "cluster: local\n").min_captured == 0  # no key: the whole game
    # --pair picks its own work: the config's scope does not stand in its way.
    assert [(p.a, p.b) for p in _plan_of(tmp_path, "min-captured: 44\n", "--pair", "24", "24").pairs] == [
        (24, 24)
    ]


def test_every_example_config_names_its_scope():
    """A config that says nothing solves the whole game (hours); each example says
    what it solves, and configs/local.yaml, for a first try, the endgame."""
    from conftest import ROOT

    from bestemshe_dist.cluster import load_config

    scopes = {p.name: load_config(p).get("min_captured") for p in (ROOT / "configs").glob("*.yaml")}
    assert None not in scopes.values(), scopes
    assert scopes["local.yaml"] == 36


@pytest.mark.parametrize(
    "text,needle",
    [
        (
            "min-captured: 37\n",
            "min-captured in the config {path} must be even, not 37: every layer's k1 + k2 is even",
        ),
        (
            "min-captured: 50\n",
            "min-captured in the config {path} must be from 0 to 48 for the 50-stone game, not 50.",
        ),
        (
            "min-captured: -2\n",
            "min-captured in the config {path} must be a whole number of at least 0, not -2.",
        ),
        (
            "min-captured: lots\n",
            "min-captured in the config {path} must be a whole number of at least 0, not 'lots'.",
        ),
    ],
)
def test_bad_config_min_captured_is_one_sentence_before_anything_starts(tmp_path, text, needle):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    out = tmp_path / "tb"
    done = run_cli("solve", "--config", path, "--out", out)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.splitlines() == [done.stderr.strip()], done.stderr
    assert needle.format(path=path) in done.stderr, done.stderr
    assert not out.exists()
