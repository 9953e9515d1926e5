"""The solve's page on the Dask dashboard, during a real local solve: loaded in
headless Chromium (Debian's, driven by Playwright), screenshot saved as a test
artifact, the grid read from the page and checked against the manifest; the
JSON endpoint and Prometheus `/metrics` show the same solve."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from conftest import BROWSER_ARGS, ROOT, chromium_path

ARTIFACT = ROOT / "tests" / "artifacts" / "dashboard-mid-solve.png"
LEAD_COPY = Path("/tmp/bestemshe-dashboard-mid-solve.png")
# 28 layers, 8 million positions; chunks small enough that the large pairs run
# rounds for a while (about 20-40 s on two busy cores).
SOLVE = ["solve", "--stones", 50, "--min-captured", 36, "--chunk-size", 200_000, "--workers", 2]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def _manifest_layers(out):
    try:
        return json.loads((out / "manifest.json").read_text())["layers"]
    except (OSError, ValueError):
        return {}


def _wait_mid_solve(base, proc, timeout=90):
    """The state once some layers are done and a large pair has checkpointed a round."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, "the solve ended before the page was seen mid-solve"
        try:
            state = json.loads(_get(f"{base}/bestemshe/state.json", timeout=2))
        except (OSError, ValueError):
            state = None
        if (
            state
            and state["counts"]["done"] >= 1
            and state["counts"]["done"] < state["total_layers"]
            and any(p["rounds"] for p in state["pairs_in_progress"])
        ):
            return state
        time.sleep(0.2)
    raise AssertionError("the solve never reached the middle")


def test_dashboard_page_during_a_solve(tmp_path):
    from playwright.sync_api import sync_playwright

    chromium = chromium_path()  # before the solve starts: a missing browser is the first thing said
    out = tmp_path / "tb"
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "solve.log", "w+")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bestemshe_dist",
            *map(str, SOLVE),
            "--out",
            str(out),
            "--dashboard-address",
            f"127.0.0.1:{port}",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=log,
        start_new_session=True,
    )
    try:
        state = _wait_mid_solve(base, proc)
        assert state["variant"] == {"stones": 50, "pits": 5} and state["min_captured"] == 36
        assert state["total_layers"] == 28 and state["solve"] == "running"

        metrics = _get(f"{base}/metrics")
        values = {
            line.split(" ")[0]: float(line.split(" ")[1])
            for line in metrics.splitlines()
            if line.startswith("bestemshe_")
        }
        assert (
            sum(values[f'bestemshe_layers{{state="{s}"}}'] for s in ("pending", "running", "done", "failed"))
            == 28
        )
        assert values['bestemshe_layers{state="done"}'] >= 1
        assert values["bestemshe_rounds_total"] >= 1
        assert 0 < values["bestemshe_positions_decided"] <= values["bestemshe_positions"] == 8_059_540

        assert 'href="bestemshe"' in _get(f"{base}/status")  # the navbar link

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True, args=BROWSER_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1500, "height": 1000})
                page.goto(f"{base}/bestemshe", wait_until="domcontentloaded", timeout=30_000)
                cells = page.locator("td[data-layer]")  # inside the Div's shadow root
                cells.first.wait_for(timeout=30_000)
                page.wait_for_timeout(700)  # one refresh
                ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACT), full_page=True)
                grid = cells.evaluate_all("els => els.map(e => [e.dataset.layer, e.dataset.state, e.title])")
                summary = page.locator("#bestemshe-summary").get_attribute("data-solve")
                nav = page.locator("a[href='bestemshe']").count()
            finally:
                browser.close()
        shutil.copyfile(ARTIFACT, LEAD_COPY)
        print(f"\nscreenshot of the page mid-solve: {ARTIFACT} (copy: {LEAD_COPY})")

        published = _manifest_layers(out)  # read after the page: it holds at least the page's done
        states = {layer: s for layer, s, _ in grid}
        assert set(states) == {
            f"{k1}_{k2}" for k1 in range(0, 25, 2) for k2 in range(0, 25, 2) if k1 + k2 >= 36
        }
        done = {layer for layer, s in states.items() if s == "done"}
        assert done and done != set(states), "the page did not show the solve mid-way"
        assert "running" in states.values()
        assert done <= set(published)
        for layer, s, title in grid:
            if s == "done":
                c = published[layer]["counts"]
                assert f"win {c['win']:,} draw {c['draw']:,} loss {c['loss']:,}" in title, title
        assert summary in ("running", "finished") and nav >= 1
        assert ARTIFACT.stat().st_size > 10_000

        log.seek(0)
        text = log.read()
        assert f"dashboard: {base}/bestemshe" in text, text
        # The rest of the solve is other tests' business (a whole solve against a
        # scheduler with the page: test_preloaded_scheduler_serves_the_page_of_a_solve).
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        log.close()


def test_preloaded_scheduler_serves_the_page_of_a_solve(tmp_path):
    """`dask scheduler --preload bestemshe_dist.watch.dashboard`: the page is there before
    any solve; a solve with --scheduler keeps that plugin and feeds it."""
    port, http = _free_port(), _free_port()
    address, base = f"tcp://127.0.0.1:{port}", f"http://127.0.0.1:{http}"
    bindir = Path(sys.executable).parent
    logs = open(tmp_path / "cluster.log", "w")
    procs = [
        subprocess.Popen(
            [
                str(bindir / "dask"),
                "scheduler",
                "--preload",
                "bestemshe_dist.watch.dashboard",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--dashboard-address",
                f"127.0.0.1:{http}",
            ],
            stdout=logs,
            stderr=logs,
            start_new_session=True,
        )
    ]
    try:
        deadline = time.time() + 60
        while True:
            try:
                state = json.loads(_get(f"{base}/bestemshe/state.json", timeout=2))
                break
            except OSError:
                assert time.time() < deadline and procs[0].poll() is None, "the scheduler did not start"
                time.sleep(0.3)
        assert state["solve"] == "idle" and state["layers"] == []
        procs.append(
            subprocess.Popen(
                [str(bindir / "dask"), "worker", address, "--nthreads", "1", "--no-dashboard"],
                stdout=logs,
                stderr=logs,
                start_new_session=True,
            )
        )
        out = tmp_path / "tb"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "bestemshe_dist",
                "solve",
                "--stones",
                "50",
                "--min-captured",
                "44",
                "--scheduler",
                address,
                "--out",
                str(out),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert f"dashboard: {base}/bestemshe" in done.stderr
        state = json.loads(_get(f"{base}/bestemshe/state.json"))
        manifest = json.loads((out / "manifest.json").read_text())["layers"]
        assert state["solve"] == "finished" and state["counts"]["done"] == len(manifest) == 6
        assert {r["layer"] for r in state["layers"] if r["state"] == "done"} == set(manifest)
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        logs.close()
