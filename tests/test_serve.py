"""`bestemshe-dist serve`: the JSON API on a real HTTP server on loopback, every
field against the oracle, batches against one-by-one probes, mainlines, and every
error as its status and one sentence (a fuzz of bad query strings never gets a 500)."""

import json
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import FIXTURE_M40, ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle_support import random_positions
from serve_support import call, running

from bestemshe_dist import Tablebase
from bestemshe_dist.game.position import Position
from bestemshe_dist.serve.app import MAX_BATCH

FLIP = {"win": "loss", "loss": "win", "draw": "draw"}


def q(pos) -> str:
    return urllib.parse.quote(str(pos))


def test_position_answers_equal_the_oracle(tb123):
    folder, tables = tb123
    tb = Tablebase.open(str(folder))
    with running(Tablebase.open(str(folder))) as base:
        for value in ("win", "draw", "loss"):
            for pos in random_positions(tb.variant, tables, 15, seed=2, value=value):
                status, got = call(f"{base}/api/position?pos={q(pos)}")
                assert status == 200, got
                found = tb.analyse(pos)
                assert (got["position"], got["category"], got["dtz"]) == (
                    str(pos),
                    found.probe.value,
                    found.probe.dtz,
                )
                assert (
                    got["rank"] == pos.rank() and got["distances"] is True and got["pits"] == list(pos.pits)
                )
                assert sorted(m["index"] for m in got["moves"]) == pos.legal_pits()
                for m in got["moves"]:
                    assert m["pit"] == m["index"] + 1
                    if m["ends_game"]:
                        assert m["category"] == "win" and m["child"] is None
                    else:
                        child = tb.probe(m["child"])
                        assert m["category"] == FLIP[child.value] and m["child_dtz"] == child.dtz
                # best first: the oracle's best move, then the rest by value
                best = tb.best_move(pos)
                if best is None:
                    assert got["moves"] == [] and got["best_move"] is None
                else:
                    assert got["moves"][0]["index"] == best.pit and got["best_move"] == best.pit + 1
                    order = {"win": 0, "draw": 1, "loss": 2}
                    values = [order[m["category"]] for m in got["moves"]]
                    assert values == sorted(values)
                # the compact form in a URL gives the same answer
                assert call(f"{base}/api/position?pos={str(pos).replace(' ', ',')}") == (status, got)


def test_batches_equal_one_by_one_and_mainlines_end_in_the_value(tb123):
    folder, tables = tb123
    tb = Tablebase.open(str(folder))
    positions = [
        p
        for value in ("win", "draw", "loss")
        for p in random_positions(tb.variant, tables, 30, seed=9, value=value)
    ]
    with running(Tablebase.open(str(folder))) as base:
        for sent in ([str(p) for p in positions], [[p.k1, p.k2, *p.pits] for p in positions]):
            status, got = call(f"{base}/api/positions", {"positions": sent})
            assert status == 200 and got["count"] == len(positions)
            assert [(c, d) for c, d in zip(got["category"], got["dtz"])] == [
                (tb.probe(p).value, tb.probe(p).dtz) for p in positions
            ]
        for pos in positions[:10] + positions[60:70]:
            status, line = call(f"{base}/api/mainline?pos={q(pos)}&max_plies=300")
            assert status == 200, line
            want = tb.mainline(pos, max_plies=300)
            assert (
                line["result"]
                == want.result
                == (want.value.value if want.value.value != "draw" else "repetition")
            )
            assert [m["index"] for m in line["moves"]] == [p.move.pit for p in want.plies]
            assert all(m["pit"] == m["index"] + 1 for m in line["moves"])


def test_every_error_is_its_status_and_one_sentence(tb123, tmp_path):
    folder, tables = tb123
    copy = tmp_path / "tb"
    shutil.copytree(folder, copy)
    tb = Tablebase.open(str(copy))
    # a damaged block (its checksum fails) in one layer, a file gone in another
    damaged_pos, gone_pos = (
        random_positions(tb.variant, {l: tables[l]}, 1, seed=1)[0] for l in [(0, 2), (2, 0)]
    )
    path = copy / "layer_0_2_win.bin"
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    (copy / "layer_2_0_win.bin").unlink()
    inside = random_positions(tb.variant, {(4, 4): tables[(4, 4)]}, 1, seed=1)[0]
    with running(tb) as base:
        cases = [
            (f"{base}/api/position?pos=1+2+3", 400, "position: expected 8 numbers"),
            (f"{base}/api/position", 400, "give the position as pos="),
            (f"{base}/api/position?pos=0+0+2+2+2+2+2+1", 400, "the pits hold 11 stones"),
            (f"{base}/api/position?pos={q(damaged_pos)}", 503, "layer_0_2_win.bin"),
            (f"{base}/api/position?pos={q(gone_pos)}", 503, "layer_2_0_win.bin"),
            (f"{base}/api/mainline?pos={q(inside)}&max_plies=0", 400, "max_plies must be from 1 to"),
            (f"{base}/api/mainline?pos={q(inside)}&max_plies=x", 400, "max_plies must be a whole number"),
            (f"{base}/api/nothing", 404, "Not Found: GET /api/nothing."),
        ]
        for url, status, needle in cases:
            got_status, body = call(url)
            assert got_status == status and needle in body["error"], (url, got_status, body)
            assert body["error"].count("\n") == 0 and "Traceback" not in body["error"]
        assert call(f"{base}/api/positions", raw=b"{not json")[0] == 400
        assert call(f"{base}/api/positions", {"nope": 1}) == (
            400,
            {"error": 'send JSON {"positions": [...]}, each position a string or a list of numbers.'},
        )
        status, body = call(f"{base}/api/positions", {"positions": [str(inside)] * (MAX_BATCH + 1)})
        assert status == 400 and f"at most {MAX_BATCH:,} positions" in body["error"]
        status, body = call(f"{base}/api/positions", {"positions": [str(inside), str(damaged_pos)]})
        assert status == 503 and "layer_0_2_win.bin" in body["error"]
    # a layer the tablebase does not hold: 404, for one position and in a batch
    with running(Tablebase.open(str(FIXTURE_M40))) as base:
        status, body = call(f"{base}/api/position?pos=0+0+5+5+5+5+5+5+5+5+5+5")
        assert status == 404 and body["error"].startswith("layer 0_0 of position 0 0 5")
        status, body = call(
            f"{base}/api/positions", {"positions": ["20 20 1 1 1 1 1 1 1 1 1 1", "0 0 5 5 5 5 5 5 5 5 5 5"]}
        )
        assert status == 404 and body["error"].startswith("positions: row 1: layer 0_0")
    # a store slower than the request timeout is a 503, and the server goes on
    # (its reads are held back by 2 s: a timeout shorter than one fast read races it)
    slow = Tablebase.open(str(FIXTURE_M40))
    analyse = slow.analyse
    slow.analyse = lambda *a, **k: (time.sleep(2), analyse(*a, **k))[1]
    with running(slow, timeout=0.2) as base:
        status, body = call(f"{base}/api/position?pos=20+20+1+1+1+1+1+1+1+1+1+1")
        assert status == 503 and "did not answer within" in body["error"]
        assert call(f"{base}/api/health")[0] == 200


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=60))
def test_no_query_string_gets_a_500(text):
    with running(Tablebase.open(str(FIXTURE_M40))) as base:
        for path in ("/api/position?pos=", "/api/mainline?max_plies=2&pos=", "/api/position?"):
            status, body = call(base + path + urllib.parse.quote(text))
            assert status in (200, 400, 404, 503) and ("error" in body) == (status != 200), (text, body)


def test_serve_command_listens_answers_and_stops_on_ctrl_c():
    proc = subprocess.Popen(
        [sys.executable, "-m", "bestemshe_dist", "serve", str(FIXTURE_M40), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"serving {FIXTURE_M40}") and "http://127.0.0.1:" in line, proc.stderr.read()
        base = line[line.index("http://") :].split("/  ")[0]
        status, body = call(f"{base}/api/health")
        assert status == 200 and body["variant"] == {"stones": 50, "pits": 5} and body["layers"] == 15
        status, got = call(f"{base}/api/position?pos=20,20,1,1,1,1,1,1,1,1,1,1")
        assert (
            status == 200
            and got["category"] == Tablebase.open(str(FIXTURE_M40)).probe("20 20 1 1 1 1 1 1 1 1 1 1").value
        )
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0


BAD_SERVE = [
    (["--port", "99999"], "argument --port: a port is from 0 to 65535, not 99999"),
    (["--port", "-1"], "argument --port: a port is from 0 to 65535, not -1"),
    (["--port", "http"], "argument --port: 'http' is not a whole number"),
    (["--host", ""], "--host is empty: give an address to listen on"),
    (["--host", "no such host!"], "--host no such host!: not an address to listen on"),
    (["--timeout", "0"], "argument --timeout: must be a finite number above 0, not 0"),
    (["--timeout", "inf"], "argument --timeout: must be a finite number above 0, not inf"),
    (["--timeout", "nan"], "argument --timeout: must be a finite number above 0, not nan"),
    (["--cache-mib", "inf"], "argument --cache-mib: must be a finite number above 0, not inf"),
    (["--cache-mib", "-1"], "argument --cache-mib: must be a finite number above 0, not -1"),
]


@pytest.mark.parametrize("args,needle", BAD_SERVE, ids=[" ".join(a) for a, _ in BAD_SERVE])
def test_bad_serve_arguments_are_one_sentence_before_anything_starts(tmp_path, args, needle):
    """Checked before the tablebase is opened (the folder given does not exist, and
    it is not what the line names) and before a socket is bound: exit 2, one line."""
    bad = subprocess.run(
        [sys.executable, "-m", "bestemshe_dist", "serve", str(tmp_path / "absent"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert bad.returncode == 2 and bad.stdout == "", bad.stderr
    assert bad.stderr.splitlines() == [bad.stderr.strip()] and needle in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr


def test_stats_over_http_equal_the_oracle(tb123):
    folder, _tables = tb123
    tb = Tablebase.open(str(folder))
    with running(Tablebase.open(str(folder))) as base:
        assert call(f"{base}/api/stats") == (200, json.loads(json.dumps(tb.stats())))
        assert call(f"{base}/api/stats?layer=2_4") == (200, json.loads(json.dumps(tb.layer_stats(2, 4))))
        status, body = call(f"{base}/api/stats?layer=2-4")
        assert status == 400 and "layer must be written K1_K2" in body["error"]
    with running(Tablebase.open(str(FIXTURE_M40))) as base:
        status, body = call(f"{base}/api/stats?layer=0_0")
        assert status == 404 and body["error"].startswith("layer 0_0 is not in this tablebase")


def test_fifty_stone_endgame_positions_equal_the_oracle():
    """Random positions of the published 50-stone endgame: every field the API gives."""
    tb = Tablebase.open(str(FIXTURE_M40))
    rng = random.Random(40)
    layers = sorted(tb.layers())
    with running(Tablebase.open(str(FIXTURE_M40))) as base:
        for _ in range(40):
            k1, k2 = rng.choice(layers)
            pos = Position.from_rank(tb.variant, k1, k2, rng.randrange(tb.variant.layer_size(k1, k2)))
            status, got = call(f"{base}/api/position?pos={q(pos)}")
            assert status == 200, got
            found = tb.analyse(pos)
            assert (got["category"], got["dtz"], got["distances"]) == (found.probe.value, None, False)
            assert got["dtz_meaning"] == "no distance table for this layer"
            assert [
                (m["index"], m["pit"], m["stones"], m["captured"], m["ends_game"], m["child"], m["category"])
                for m in got["moves"]
            ] == [
                (
                    m.pit,
                    m.pit + 1,
                    m.stones,
                    m.captured,
                    m.ends_game,
                    None if m.child is None else str(m.child),
                    m.value,
                )
                for m in found.ordered_moves()
            ]
            assert all(m["dtz"] is None and m["child_dtz"] is None for m in got["moves"])


def test_layers_and_random_positions_for_the_start_picker(tb123):
    folder, tables = tb123
    with running(Tablebase.open(str(FIXTURE_M40))) as base:
        status, got = call(f"{base}/api/layers")
        assert status == 200 and got["start"] is None and got["variant"] == {"stones": 50, "pits": 5}
        assert {(row["k1"], row["k2"]) for row in got["layers"]} == Tablebase.open(str(FIXTURE_M40)).layers()
        assert [row["board_stones"] for row in got["layers"]] == sorted(
            (r["board_stones"] for r in got["layers"]), reverse=True
        )
        assert all(
            row["positions"] == Tablebase.open(str(FIXTURE_M40)).variant.layer_size(row["k1"], row["k2"])
            for row in got["layers"]
        )
        for seed in range(5):
            status, got = call(f"{base}/api/random?layer=20_20&symmetric=1&seed={seed}")
            pos = Tablebase.open(str(FIXTURE_M40)).position(got["position"])
            assert (
                status == 200
                and pos.layer == (20, 20)
                and sum(pos.own) == sum(pos.other)
                and pos.legal_pits()
            )
        # the same seed, the same position
        assert call(f"{base}/api/random?layer=16_24&seed=3") == call(f"{base}/api/random?layer=16_24&seed=3")
        for query, status, needle in [
            ("layer=18_22&symmetric=1", 400, "layer 18_22 has no symmetric position"),
            ("layer=0_0", 404, "layer 0_0 is not in this tablebase"),
            ("layer=3_4", 400, "layer 3_4: k1=3 is not a stored kazan"),
            ("layer=x", 400, "layer must be written K1_K2"),
            ("", 400, "layer must be written K1_K2"),
        ]:
            got_status, body = call(f"{base}/api/random?{query}")
            assert got_status == status and needle in body["error"], (query, body)
    with running(Tablebase.open(str(folder))) as base:
        status, got = call(f"{base}/api/layers")
        assert got["start"] == "0 0 2 2 2 2 2 2" and len(got["layers"]) == len(tables)
        assert all(row["distances"] for row in got["layers"])
        # the page and its files are served
        for path, kind in [
            ("/", "text/html"),
            ("/static/explorer.js", "javascript"),
            ("/static/explorer.css", "css"),
        ]:
            with urllib.request.urlopen(base + path, timeout=30) as answer:
                assert answer.status == 200 and kind in answer.headers["Content-Type"]


def _rss_mib(pid: int, field: str) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def test_bounded_load_no_failed_request_and_memory_bounded_by_the_cache():
    """A fixed load (stops by itself) on `serve --cache-mib 0.1`, a cache smaller
    than the fixture's decompressed blocks (30 files of 11.5 KB and more), so
    blocks are dropped and read again all through: every answer right, none
    failed, the cache never past its bound, the process's memory flat."""
    tb = Tablebase.open(str(FIXTURE_M40))
    rng = random.Random(7)
    layers = sorted(tb.layers())
    positions = [
        Position.from_rank(tb.variant, k1, k2, rng.randrange(tb.variant.layer_size(k1, k2)))
        for k1, k2 in (rng.choice(layers) for _ in range(600))
    ]
    truth = {str(p): tb.probe(p).value for p in positions}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bestemshe_dist",
            "serve",
            str(FIXTURE_M40),
            "--port",
            "0",
            "--cache-mib",
            "0.1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        line = proc.stdout.readline()
        base = line[line.index("http://") :].split("/  ")[0]
        limit = call(f"{base}/api/health")[1]["cache_limit_bytes"]
        assert limit == int(0.1 * 2**20)

        def one(i):
            pos = positions[i % len(positions)]
            kind = i % 5
            if kind == 0:
                status, got = call(f"{base}/api/probe?pos={q(pos)}")
                return status == 200 and got["category"] == truth[str(pos)]
            if kind == 1:
                status, got = call(f"{base}/api/position?pos={q(pos)}")
                return status == 200 and got["category"] == truth[str(pos)]
            if kind == 2:
                status, got = call(f"{base}/api/mainline?pos={q(pos)}&max_plies=40")
                return status == 200 and got["category"] == truth[str(pos)]
            if kind == 3:
                chunk = [positions[(i + j * 7) % len(positions)] for j in range(400)]
                status, got = call(
                    f"{base}/api/positions", {"positions": [[p.k1, p.k2, *p.pits] for p in chunk]}
                )
                return status == 200 and got["category"] == [truth[str(p)] for p in chunk]
            status, got = call(
                f"{base}/api/position?pos=0,0,5,5,5,5,5,5,5,5,5,5"
            )  # not held: a 404 by design
            return status == 404

        for i in range(50):  # warm up: the process's own memory, before the load
            assert one(i)
        before = _rss_mib(proc.pid, "VmRSS")
        watched, stop = [], threading.Event()

        def watch():
            while not stop.is_set():
                watched.append(call(f"{base}/api/health")[1]["reads"]["cached_bytes"])
                stop.wait(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(one, range(3000)))
        stop.set()
        watcher.join()
        assert answers.count(False) == 0 and len(answers) == 3000
        reads = call(f"{base}/api/health")[1]["reads"]
        assert len(watched) >= 10 and max(watched + [reads["cached_bytes"]]) <= limit
        assert reads["requests"] > 60, "the small cache must have dropped blocks and read them again"
        peak = _rss_mib(proc.pid, "VmHWM")
        print(
            f"load: rss {before:.0f} -> peak {peak:.0f} MiB; cache at most {max(watched)} of {limit}; {reads}"
        )
        assert peak - before < 40, f"memory grew from {before:.0f} to {peak:.0f} MiB under a 0.1 MiB cache"
    finally:
        proc.send_signal(signal.SIGTERM)  # as Kubernetes stops a pod: a clean exit
        assert proc.wait(30) == 0


def test_probe_and_byte_batches_equal_the_oracle(tb123):
    folder, tables = tb123
    tb = Tablebase.open(str(folder))
    positions = random_positions(tb.variant, tables, 300, seed=4)
    rows = np.array([[p.k1, p.k2, *p.pits] for p in positions], np.int64)
    want = tb.probe_many(rows)
    with running(Tablebase.open(str(folder))) as base:
        for pos in positions[:30]:
            probe = tb.probe(pos)
            assert call(f"{base}/api/probe?pos={q(pos)}") == (
                200,
                {"position": str(pos), "category": probe.value, "dtz": probe.dtz},
            )

        def post_bytes(body):
            request = urllib.request.Request(
                f"{base}/api/positions", data=body, headers={"Content-Type": "application/octet-stream"}
            )
            try:
                with urllib.request.urlopen(request, timeout=60) as answer:
                    return answer.status, answer.read()
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        status, got = post_bytes(rows.astype(np.uint8).tobytes())
        n = len(rows)
        assert status == 200 and len(got) == 5 * n
        assert np.array_equal(np.frombuffer(got[:n], np.int8), want.value)
        assert np.array_equal(np.frombuffer(got[n:], "<i4"), want.dtz)
        status, body = post_bytes(rows.astype(np.uint8).tobytes()[:-1])
        assert status == 400 and "not a whole number of 8-byte positions" in body["error"]
        bad = rows.copy()
        bad[5, 2] += 1
        status, body = post_bytes(bad.astype(np.uint8).tobytes())
        assert status == 400 and body["error"].startswith("positions: row 5: the pits hold")
        # JSON: numbers written true/false or 2.0 are refused, not read as 1, 0 and 2
        for row in ([True, False, *positions[0].pits], [2.0, 0, *positions[0].pits]):
            status, body = call(f"{base}/api/positions", {"positions": [row]})
            assert status == 400 and body["error"].startswith("position"), body


_number = st.one_of(
    st.integers(-3, 60),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.none(),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.one_of(st.lists(_number, min_size=10, max_size=14), st.text(max_size=30), _number), max_size=5
    )
)
def test_no_batch_body_gets_a_500(positions):
    """Batches of anything (rows of odd lengths, booleans, floats, huge numbers,
    strings): a 200 with an answer a position, or a 400/404 sentence."""
    with running(Tablebase.open(str(FIXTURE_M40))) as base:
        status, body = call(f"{base}/api/positions", {"positions": positions})
        assert status in (200, 400, 404), (positions, body)
        assert (status == 200) == ("count" in body) and (status == 200 or "error" in body)
        if status == 200:
            assert body["count"] == len(positions)


def test_probe_json_and_the_api_answer_with_one_schema(tb123):
    """`probe --json` prints what GET /api/position answers, `mainline --json` what
    GET /api/mainline answers: the same keys and the same values (docs/json.md),
    with distances (tb123) and without (the published fixture)."""
    from conftest import run_cli

    folder, tables = tb123
    cases = [(folder, p) for p in random_positions(Tablebase.open(str(folder)).variant, tables, 3, seed=4)]
    cases.append((FIXTURE_M40, "20 20 1 1 1 1 1 1 1 1 1 1"))
    for where, pos in cases:
        with running(Tablebase.open(str(where))) as base:
            status, api = call(f"{base}/api/position?pos={q(pos)}")
            assert status == 200, api
            status, api_line = call(f"{base}/api/mainline?pos={q(pos)}&max_plies=50")
            assert status == 200, api_line
        probe = run_cli("probe", where, str(pos), "--json")
        assert probe.returncode == 0, probe.stderr
        assert json.loads(probe.stdout) == api
        line = run_cli("mainline", where, str(pos), "--json", "--max-plies", "50")
        assert line.returncode == 0, line.stderr
        assert json.loads(line.stdout) == api_line
        assert "value" not in api and all(m["pit"] == m["index"] + 1 for m in api["moves"])
        assert api["best_move"] in (None, *(m["pit"] for m in api["moves"]))
        assert all(m["after"] is None or set(m["after"]) == {"category", "dtz"} for m in api_line["moves"])
