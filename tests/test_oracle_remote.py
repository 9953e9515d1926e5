"""The oracle over the network: a real HTTP server with Range support (nginx, from
the Debian packages, started here on loopback) and a real S3 server (SeaweedFS).
Probes equal the solver's tables, and read only the byte ranges they need."""

import json
import os
import shutil
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import zstandard
from conftest import FIXTURE_M40, S3_BUCKET, S3_KEY, S3_SECRET, run_cli
from oracle_support import assert_every_probe_matches, layer_positions, solve_into, solver_tables

from bestemshe_dist import Position, Tablebase
from bestemshe_dist.data import format as fmt
from bestemshe_dist.game.variant import Variant

WIDE = (20, 0)  # 211,915,132 positions: 7 blocks of the 50-stone game


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _nginx_binary():
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    assert found, "nginx is not installed: scripts/test.sh installs it (apt-get install nginx-light)"
    return found


class Nginx:
    def __init__(self, root: Path, work: Path):
        self.root, self.work, self.port = root, work, _free_port()
        self.log = work / "access.log"
        conf = work / "nginx.conf"
        user = "user root;\n" if os.geteuid() == 0 else ""  # workers must read pytest's 0700 tmp
        temp = "\n".join(
            f"    {k}_temp_path {work}/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        conf.write_text(f"""{user}worker_processes 1;
daemon off;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 64; }}
http {{
    log_format probe '$request_method $uri $status $body_bytes_sent "$http_range"';
    access_log {self.log} probe;
    default_type application/octet-stream;
{temp}
    server {{
        listen 127.0.0.1:{self.port};
        root {root};
    }}
}}
""")
        self.proc = subprocess.Popen(
            [_nginx_binary(), "-p", str(work), "-c", str(conf), "-e", str(work / "error.log")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + 20
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    break
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"nginx did not start: {(work / 'error.log').read_text()[-2000:]}")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}"

    def entries(self, prefix="", after=0, expect=None):
        """Access log lines past the first `after`: (method, uri, status, bytes, range)."""
        deadline = time.time() + 5
        while True:
            lines = self.log.read_text().splitlines() if self.log.exists() else []
            rows = []
            for line in lines[after:]:
                method, uri, status, sent, rng = line.split(" ", 4)
                if uri.startswith(prefix):
                    rows.append((method, uri, int(status), int(sent), rng.strip('"')))
            if expect is None or len(rows) >= expect or time.time() > deadline:
                return rows
            time.sleep(0.05)  # nginx logs a request once its response is sent

    def lines(self):
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)


def _wide_folder(folder: Path):
    """A bare folder (no manifest: the 50/5 game) with one multi-block layer of made-up
    values: random win bits, no draws. Frames at level 1, which a reader accepts."""
    folder.mkdir()
    variant = Variant(50, 5)
    nbits = variant.layer_size(*WIDE)
    blocks = fmt.blocks_for_bits(nbits)
    bits = np.random.default_rng(1).integers(0, 256, fmt.bitset_bytes(nbits), dtype=np.uint8)
    cctx = zstandard.ZstdCompressor(level=1, write_content_size=True, write_checksum=False)
    frames = []
    for b in range(blocks):
        chunk = np.zeros(fmt.BLOCK_BYTES, np.uint8)
        part = bits[b * fmt.BLOCK_BYTES : (b + 1) * fmt.BLOCK_BYTES]
        chunk[: part.shape[0]] = part
        frames.append(cctx.compress(chunk.tobytes()))
    zero = cctx.compress(bytes(fmt.BLOCK_BYTES))
    (folder / "layer_20_0_win.bin").write_bytes(fmt.build_file(frames))
    (folder / "layer_20_0_draw.bin").write_bytes(fmt.build_file([zero] * blocks))
    return bits, blocks


@pytest.fixture(scope="module")
def served(client, tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    solve_into(client, root / "tb83", 8, 3, dtz=True)
    (root / "m40").mkdir()
    for f in FIXTURE_M40.glob("*.bin"):
        shutil.copyfile(f, root / "m40" / f.name)
    bits, blocks = _wide_folder(root / "wide")
    server = Nginx(root, tmp_path_factory.mktemp("nginx"))
    try:
        yield server, root, bits, blocks
    finally:
        server.stop()


def test_http_probes_equal_the_solver_tables_reading_only_ranges(served):
    server, root, _, _ = served
    variant = Variant(8, 3)
    tables = solver_tables(root / "tb83", variant)
    url = f"{server.url}/tb83"

    # One probe from cold: the layer's checksum file, the win file's header and one
    # frame, then the dtz file's.
    tb = Tablebase.open(url)
    assert tb.variant == variant
    before = server.lines()
    pos = Position.parse("0 4 2 1 0 0 0 1", variant)
    assert (tb.probe(pos).value, tb.probe(pos).dtz) == ("win", 3)
    sizes = {kind: (root / "tb83" / f"layer_0_4_{kind}.bin").stat().st_size for kind in ("win", "dtz")}
    sizes["sums"] = (root / "tb83" / "layer_0_4.sums.json").stat().st_size
    rows = server.entries("/tb83/", before, expect=5)
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
        ("GET", "/tb83/layer_0_4.sums.json", 200, "-"),
        ("GET", "/tb83/layer_0_4_win.bin", 206, "bytes=0-11"),
        ("GET", "/tb83/layer_0_4_win.bin", 206, f"bytes=12-{sizes['win'] - 1}"),
        ("GET", "/tb83/layer_0_4_dtz.bin", 206, "bytes=0-11"),
        ("GET", "/tb83/layer_0_4_dtz.bin", 206, f"bytes=12-{sizes['dtz'] - 1}"),
    ]
    assert tb.bytes_fetched == sum(r[3] for r in rows) == sizes["win"] + sizes["dtz"] + sizes["sums"]
    assert tb.requests == 5 and tb.verified(0, 4)

    # Every position, from eight threads at once, equals the solver's tables.
    tb = Tablebase.open(url)
    before = server.lines()
    layers = sorted(tables)
    with ThreadPoolExecutor(8) as pool:
        counts = list(pool.map(lambda l: assert_every_probe_matches(tb, {l: tables[l]}), layers))
    assert sum(counts) == sum(variant.layer_size(*l) for l in layers)
    rows = server.entries("/tb83/layer_", before, expect=tb.requests)
    # header + frame per file, and the layer's checksum file, once
    assert len(rows) == tb.requests <= (2 * 3 + 1) * len(layers)
    sums = [r for r in rows if r[1].endswith(".sums.json")]
    assert len(sums) == len(layers) and all(r[0] == "GET" and r[2] == 200 for r in sums)
    assert all(r[0] == "GET" and r[2] == 206 and r[4].startswith("bytes=") for r in rows if r not in sums)
    assert tb.bytes_fetched == sum(r[3] for r in rows)


def test_http_bare_folder_reads_one_block_of_a_large_file(served):
    server, root, bits, blocks = served
    url = f"{server.url}/wide"
    win_file = (root / "wide" / "layer_20_0_win.bin").read_bytes()
    draw_file = (root / "wide" / "layer_20_0_draw.bin").read_bytes()
    win_offsets = fmt.parse_header(win_file, len(win_file), "win")
    draw_offsets = fmt.parse_header(draw_file, len(draw_file), "draw")
    hsize = fmt.header_size(blocks)
    assert blocks == 7
    bit = lambda x: int(bits[x >> 3] >> (x & 7)) & 1  # noqa: E731
    for block, want in ((0, 1), (3, 0), (6, 1)):
        x = next(x for x in range(block * fmt.BLOCK_BITS, (block + 1) * fmt.BLOCK_BITS) if bit(x) == want)
        tb = Tablebase.open(url)
        assert tb.manifest is None and tb.variant == Variant(50, 5)
        before = server.lines()
        pos = Position.from_rank(tb.variant, *WIDE, x)
        assert tb.probe(pos).value == ("win" if want else "loss")
        frame = lambda offsets: int(offsets[block + 1] - offsets[block])  # noqa: E731
        expected = hsize + frame(win_offsets) + (0 if want else hsize + frame(draw_offsets))
        assert tb.bytes_fetched == expected
        assert tb.bytes_fetched < len(win_file) / 5  # far less than the file
        # A bare folder has no checksum file: one GET answered 404, then the probe is unverified.
        rows = server.entries("/wide/", before, expect=4 if want else 7)
        gets = [r for r in rows if r[0] == "GET"]
        assert gets[0][:3] == ("GET", "/wide/layer_20_0.sums.json", 404) and not tb.verified(*WIDE)
        assert gets[1:3] == [
            ("GET", "/wide/layer_20_0_win.bin", 206, hsize, f"bytes=0-{hsize - 1}"),
            (
                "GET",
                "/wide/layer_20_0_win.bin",
                206,
                frame(win_offsets),
                f"bytes={win_offsets[block]}-{win_offsets[block + 1] - 1}",
            ),
        ]
        assert sum(r[3] for r in gets[1:]) == expected
        # The file sizes come from HEAD requests (no body) when there is no manifest.
        assert {r[3] for r in rows if r[0] == "HEAD"} <= {0}


def test_http_published_layout_and_cli(served):
    server, _, _, _ = served
    remote = Tablebase.open(f"{server.url}/m40")
    local = Tablebase.open(str(FIXTURE_M40))
    for layer in ((20, 20), (24, 16), (16, 24), (22, 22)):
        for pos in layer_positions(remote.variant, *layer, step=97):
            assert remote.probe(pos) == local.probe(pos)
            assert remote.moves(pos) == local.moves(pos)
    done = run_cli("probe", f"{server.url}/m40", "20", "20", *["1"] * 10, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["category"] == local.probe("20 20 1 1 1 1 1 1 1 1 1 1").value
    missing = run_cli("probe", f"{server.url}/m40", "0", "0", *["5"] * 10)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert missing.stderr.strip() == (
        f"bestemshe-dist probe: cannot stat {server.url}/m40/layer_0_0_win.bin: it does not exist."
    )


def test_s3_probes_equal_the_solver_tables(client, seaweed):
    endpoint, env = seaweed
    options = {"key": S3_KEY, "secret": S3_SECRET, "client_kwargs": {"endpoint_url": endpoint}}
    url = f"s3://{S3_BUCKET}/oracle/tb83"
    variant = solve_into(client, url, 8, 3, dtz=True, storage_options=options)
    tables = solver_tables(url, variant, options)
    tb = Tablebase.open(url, options)
    assert tb.variant == variant and S3_SECRET not in repr(tb)
    assert assert_every_probe_matches(tb, tables) == sum(variant.layer_size(*l) for l in tables)
    assert tb.requests <= (2 * 3 + 1) * len(tables)

    done = run_cli("probe", url, "0 4 2 1 0 0 0 1", "--json", env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["category"], data["dtz"], data["best_move"]) == ("win", 3, 2)
    assert S3_SECRET not in done.stdout + done.stderr
    missing = run_cli("probe", f"s3://{S3_BUCKET}/oracle/none", "0", "0", *["5"] * 10, env=env)
    assert missing.returncode == 1 and S3_SECRET not in missing.stderr
    assert missing.stderr == (
        f"bestemshe-dist probe: s3://{S3_BUCKET}/oracle/none holds no tablebase: no "
        "manifest.json and no layer_<k1>_<k2>_win.bin files are there.\n"
    )


def test_s3_store_gone_is_one_sentence_within_seconds(client, seaweed_server, seaweed):
    """A reader answers a person or a request: a store that stops answering is
    waited for a few seconds (ORACLE_PATIENCE), not the solve's 120 s, then one
    sentence naming the store."""
    from bestemshe_dist.errors import StoreError

    endpoint, _ = seaweed
    options = {"key": S3_KEY, "secret": S3_SECRET, "client_kwargs": {"endpoint_url": endpoint}}
    url = f"s3://{S3_BUCKET}/oracle/gone63"
    variant = solve_into(client, url, 6, 3, dtz=True, storage_options=options)
    tb = Tablebase.open(url, options)  # the manifest read: the store has answered
    position = Position.parse("0 0 " + " ".join(["1"] * 6), variant)
    seaweed_server.stop()
    try:
        start = time.monotonic()
        with pytest.raises(StoreError) as failed:
            tb.probe(position)
        waited = time.monotonic() - start
    finally:
        seaweed_server.start()
    message = str(failed.value)
    assert message.startswith(f"cannot read s3://{S3_BUCKET}/oracle/gone63/") and "did not answer" in message
    assert waited < 60, f"waited {waited:.0f} s for a store that is gone"
    assert tb.probe(position) is not None  # back: the reader goes on
