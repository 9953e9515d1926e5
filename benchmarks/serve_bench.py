"""How fast `bestemshe-dist serve` answers, on loopback, with its own load generator.

    python benchmarks/serve_bench.py [TABLEBASE] [--requests 20000] [--connections 8]
                                     [--batch-size 10000] [--batches 60] [--json]

TABLEBASE (default: the published m40 files the tests carry) is served by a real
`bestemshe-dist serve --port 0` in its own process; this process is the client:
plain asyncio streams on keep-alive connections (no HTTP library, so the client
costs as little of the machine's second core as it can). Random positions of the
held layers are drawn once and every block they touch is read once before timing,
so single probes run from cached blocks. Phases, each a fixed number of requests:

  probe     GET /api/probe?pos=...        value and distance
  position  GET /api/position?pos=...     value, distance and every move with its child's value
  json      POST /api/positions, JSON     --batch-size positions a request
  bytes     POST /api/positions, bytes    the same positions as 12-byte rows
  in-process  Tablebase.probe_many on the same batches, no HTTP

For each: requests per second, positions per second, p50 and p99 latency; the
answers of every phase are checked against in-process probes of the same
positions (a wrong answer fails the benchmark). The server's peak RSS is read
from /proc at the end: its block cache bounds it (--cache-mib).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TABLEBASE = ROOT / "tests" / "fixtures" / "published-m40"
VALUE = {"win": 1, "draw": 0, "loss": -1}


def start_server(url: str, cache_mib: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bestemshe_dist", "serve", url, "--port", "0", "--cache-mib", str(cache_mib)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        raise SystemExit(f"serve_bench: the server did not start: {line}{proc.stderr.read()}")
    return proc, line[line.index("http://") :].split("/  ")[0]


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _exchange(reader, writer, request: bytes) -> tuple[int, bytes]:
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    return status, await reader.readexactly(length)


async def load(host: str, port: int, requests: list[bytes], connections: int) -> tuple[float, list, list]:
    """Send every request over `connections` keep-alive connections, each taking
    the next request when its last answer is in. (wall seconds, latencies, bodies)."""
    latencies = [0.0] * len(requests)
    bodies = [b""] * len(requests)
    queue = iter(range(len(requests)))

    async def worker():
        reader, writer = await asyncio.open_connection(host, port)
        for i in queue:
            t = time.perf_counter()
            status, body = await _exchange(reader, writer, requests[i])
            latencies[i] = time.perf_counter() - t
            if status != 200:
                raise SystemExit(f"serve_bench: request {i} failed with {status}: {body[:200]!r}")
            bodies[i] = body
        writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    return time.perf_counter() - start, latencies, bodies


def get(host: str, path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


def post(host: str, path: str, body: bytes, kind: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def figures(name: str, wall: float, latencies: list, positions: int) -> dict:
    lat = np.array(latencies) * 1e3
    return {
        "phase": name,
        "requests": len(latencies),
        "positions": positions,
        "wall_s": round(wall, 3),
        "requests_per_s": round(len(latencies) / wall, 1),
        "positions_per_s": round(positions / wall),
        "p50_ms": round(float(np.percentile(lat, 50)), 3),
        "p99_ms": round(float(np.percentile(lat, 99)), 3),
    }


def main() -> int:
    from bestemshe_dist.game import rules
    from bestemshe_dist.game.position import Position
    from bestemshe_dist.oracle.tablebase import Tablebase

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", nargs="?", default=str(DEFAULT_TABLEBASE))
    ap.add_argument("--requests", type=int, default=20_000, help="single-position requests per phase")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=10_000)
    ap.add_argument("--batches", type=int, default=60, help="batch requests per batch phase")
    ap.add_argument("--cache-mib", type=int, default=256, help="the server's block cache")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    tb = Tablebase.open(args.url)
    layers = sorted(tb.layers() or [])
    if not layers:
        print(f"serve_bench: {tb.url} lists no layers", file=sys.stderr)
        return 1
    v = tb.variant
    rng = random.Random(args.seed)
    singles = [
        Position.from_rank(v, *layer, rng.randrange(v.layer_size(*layer)))
        for layer in (rng.choice(layers) for _ in range(args.requests))
    ]
    # batches: the rows drawn in numpy (uniform over layers, then over ranks)
    nprng = np.random.default_rng(args.seed)
    rows = np.empty((args.batch_size * args.batches, 2 + v.board), np.int64)
    board = np.empty(v.board, np.int64)
    which = nprng.integers(len(layers), size=len(rows))
    for i, j in enumerate(which):
        k1, k2 = layers[j]
        rules.unrank(int(nprng.integers(v.layer_size(k1, k2))), v.board_stones(k1, k2), v.binom, board)
        rows[i, :2] = k1, k2
        rows[i, 2:] = board
    truth_single = [tb.probe(p) for p in singles]
    truth_rows = tb.probe_many(rows)

    proc, base = start_server(args.url, args.cache_mib)
    host, port = base.removeprefix("http://").split(":")
    port = int(port)
    results = []
    try:
        # read every block once: every later request runs from the cache
        warm = [
            post(
                host,
                "/api/positions",
                rows[i : i + 10_000].astype(np.uint8).tobytes(),
                "application/octet-stream",
            )
            for i in range(0, len(rows), 10_000)
        ]
        asyncio.run(load(host, port, warm, 2))
        asyncio.run(
            load(
                host,
                port,
                [get(host, f"/api/position?pos={str(p).replace(' ', ',')}") for p in singles[:2000]],
                args.connections,
            )
        )

        requests = [get(host, f"/api/probe?pos={str(p).replace(' ', ',')}") for p in singles]
        wall, lat, bodies = asyncio.run(load(host, port, requests, args.connections))
        got = [json.loads(b) for b in bodies]
        assert [(g["category"], g["dtz"]) for g in got] == [(t.value, t.dtz) for t in truth_single], (
            "probe answers"
        )
        results.append(figures("probe", wall, lat, len(requests)))

        requests = [get(host, f"/api/position?pos={str(p).replace(' ', ',')}") for p in singles]
        wall, lat, bodies = asyncio.run(load(host, port, requests, args.connections))
        assert [json.loads(b)["category"] for b in bodies] == [t.value for t in truth_single], (
            "position answers"
        )
        results.append(figures("position", wall, lat, len(requests)))

        chunks = [rows[i : i + args.batch_size] for i in range(0, len(rows), args.batch_size)]
        requests = [
            post(host, "/api/positions", json.dumps({"positions": c.tolist()}).encode(), "application/json")
            for c in chunks
        ]
        wall, lat, bodies = asyncio.run(load(host, port, requests, 2))
        values = np.concatenate([[VALUE[x] for x in json.loads(b)["category"]] for b in bodies])
        assert np.array_equal(values, truth_rows.value), "JSON batch answers"
        results.append(figures("json batches", wall, lat, len(rows)))

        requests = [
            post(host, "/api/positions", c.astype(np.uint8).tobytes(), "application/octet-stream")
            for c in chunks
        ]
        wall, lat, bodies = asyncio.run(load(host, port, requests, 2))
        values = np.concatenate([np.frombuffer(b[: len(b) // 5], np.int8) for b in bodies])
        dtz = np.concatenate([np.frombuffer(b[len(b) // 5 :], "<i4") for b in bodies])
        assert np.array_equal(values, truth_rows.value) and np.array_equal(dtz, truth_rows.dtz), (
            "byte batches"
        )
        results.append(figures("byte batches", wall, lat, len(rows)))
        rss = peak_rss_mib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)

    lat = []
    start = time.perf_counter()
    for c in chunks:
        t = time.perf_counter()
        tb.probe_many(c)
        lat.append(time.perf_counter() - t)
    results.append(figures("probe_many in-process", time.perf_counter() - start, lat, len(rows)))

    report = {
        "tablebase": tb.url,
        "connections": args.connections,
        "batch_size": args.batch_size,
        "server_peak_rss_mib": round(rss, 1),
        "cache_mib": args.cache_mib,
        "cores": os.cpu_count(),
        "phases": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"serve_bench: {tb.url}, {args.connections} connections for single requests, "
        f"batches of {args.batch_size:,}, {os.cpu_count()} cores (client and server share them)"
    )
    print(f"  {'phase':<24}{'requests':>9}{'req/s':>10}{'positions/s':>13}{'p50 ms':>9}{'p99 ms':>9}")
    for r in results:
        print(
            f"  {r['phase']:<24}{r['requests']:>9,}{r['requests_per_s']:>10,.0f}{r['positions_per_s']:>13,}"
            f"{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}"
        )
    print(f"  server peak RSS {rss:.0f} MiB with a {args.cache_mib} MiB block cache; every answer checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
