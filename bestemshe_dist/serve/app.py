"""The tablebase over HTTP: a JSON API on aiohttp (already a dependency for
fsspec's http(s):// reads, so serving adds none).

    GET  /api/position?pos=K1 K2 P0 .. P9     value, distance, every move best first
    GET  /api/probe?pos=...                     the value and distance only (no moves): the cheap probe
    GET  /api/mainline?pos=...&max_plies=N    perfect play to the end (or a repetition, or N plies)
    POST /api/positions   {"positions": [...]}  many values in one pass (probe_many)
    POST /api/positions   (application/octet-stream) the same, as bytes: see batch_bytes
    GET  /api/stats[?layer=K1_K2]               counts, distance histograms, longest win and loss
    GET  /api/layers                            the layers held (for the explorer's start picker)
    GET  /api/random?layer=K1_K2[&symmetric=1]  a random position of a held layer with a move to make
    GET  /api/health                            the tablebase served, its variant, reads and cache
    GET  /                                      the web explorer (static files in serve/static/)

A position is written from the side to move, as the CLI takes it; in a URL its
numbers may be joined by commas (`pos=0,0,5,5,5,5,5,5,5,5,5,5`). Pits in
answers: `pit` numbers them as a person reads them (1..pits from the mover's
left), `index` is the 0-based index into the mover's row. The bodies of
/api/position and /api/mainline are oracle/report.py's, which `probe --json` and
`mainline --json` print too: one schema (docs/json.md).

Errors are JSON `{"error": one sentence}`: 400 for a bad position or request,
404 for a position whose layer the tablebase does not hold, 503 naming the file
for a damaged or unreachable block, or a store that did not answer within the
request timeout. The oracle's blocking reads run on a thread pool, so one slow
request never stops the others.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import orjson
from aiohttp import web

from ..errors import BestemsheError, FormatError, StoreError, UsageError
from ..game.position import Position, random_symmetric
from ..naming import counted, layer_name, parse_layer_name
from ..oracle.report import mainline_report, report
from ..oracle.tablebase import VALUE_OF, Tablebase

log = logging.getLogger(__name__)

MAX_BATCH = 100_000  # positions in one POST /api/positions
MAX_PLIES = 1000  # the most a mainline request may ask for
DEFAULT_PLIES = 400
REQUEST_SECONDS = 10.0  # the oracle's work for one request, reads included
TABLEBASE = web.AppKey("tablebase", Tablebase)
POOL = web.AppKey("pool", ThreadPoolExecutor)
TIMEOUT = web.AppKey("timeout", float)
STATIC = Path(__file__).with_name("static")
RANDOM_TRIES = 10_000  # draws for a position with a move to make


class NotHeld(BestemsheError):
    """A valid position whose layer the tablebase does not hold (404)."""


def _holds(tb: Tablebase, layer: tuple[int, int]) -> bool:
    """False only when the tablebase is known not to hold `layer`."""
    held = tb.layers()
    return held is None or tuple(layer) in held


def _require(tb: Tablebase, layer: tuple[int, int], what: str) -> None:
    if not _holds(tb, layer):  # so the tablebase could say which layers it holds
        held = tb.layers() or set()
        raise NotHeld(f"{what} is not in this tablebase (it holds {counted(len(held), 'layer')}).")


def _position(tb: Tablebase, text: str | None) -> Position:
    if text is None or not text.strip():
        raise UsageError("give the position as pos=K1 K2 P0 .. P9 (numbers separated by spaces or commas).")
    pos = tb.position(text)
    _require(tb, pos.layer, f"layer {layer_name(*pos.layer)} of position {pos}")
    return pos


def position_answer(tb: Tablebase, pos: Position) -> dict[str, Any]:
    """GET /api/position's body: report()'s, the schema `probe --json` prints too."""
    return report(tb, pos)


def batch_answer(tb: Tablebase, body: Any, raw: bytes = b"") -> dict[str, Any]:
    """POST /api/positions' body: {"positions": [...]} (each a string or a list of
    numbers) answered in one pass. Lists of whole numbers go to numpy in one call
    (`raw`, the request's bytes, says no JSON true/false hides among them, which
    numpy would read as 1 and 0); anything else goes through Tablebase.rows."""
    if not isinstance(body, dict) or not isinstance(body.get("positions"), list):
        raise UsageError('send JSON {"positions": [...]}, each position a string or a list of numbers.')
    given = body["positions"]
    if len(given) > MAX_BATCH:
        raise UsageError(f"at most {MAX_BATCH:,} positions a request, not {len(given):,}.")
    width = 2 + tb.variant.board
    rows = None
    if raw and b"true" not in raw and b"false" not in raw:
        try:
            quick = np.array(given)
        except (ValueError, TypeError, OverflowError):  # ragged, mixed kinds: the careful path says what
            quick = None
        if quick is not None and quick.dtype.kind == "i" and quick.shape == (len(given), width):
            rows = quick.astype(np.int64, copy=False)
    if rows is None:
        rows = tb.rows(given)  # position by position, a bad one named by its row
    _require_rows(tb, rows)
    got = tb.probe_many(rows)
    names = np.array([VALUE_OF[x] for x in (-1, 0, 1)])
    return {
        "count": len(got),
        "category": names[got.value.astype(np.int64) + 1].tolist(),
        "dtz": [None if d < 0 else d for d in got.dtz.tolist()],
    }


def batch_bytes(tb: Tablebase, body: bytes) -> bytes:
    """POST /api/positions with Content-Type application/octet-stream: the body is
    N rows of 2 + board bytes (k1 k2 p0 .. as unsigned bytes: every count of the
    game fits), the answer N signed bytes (1 win, 0 draw, -1 loss for the side to
    move) then N little-endian int32 distances (-1: none). JSON's parsing and
    printing cost more than the probes themselves (see benchmarks/serve_bench.py)."""
    width = 2 + tb.variant.board
    if len(body) % width:
        raise UsageError(f"the body holds {len(body):,} bytes, not a whole number of {width}-byte positions.")
    if len(body) // width > MAX_BATCH:
        raise UsageError(f"at most {MAX_BATCH:,} positions a request, not {len(body) // width:,}.")
    rows = np.frombuffer(body, np.uint8).reshape(-1, width).astype(np.int64)
    _require_rows(tb, rows)
    got = tb.probe_many(rows)
    return got.value.astype("<i1").tobytes() + got.dtz.astype("<i4").tobytes()


def _require_rows(tb: Tablebase, rows: np.ndarray) -> None:
    """Rows checked as positions (400), then as held (404 naming the first row of a
    layer the tablebase does not hold). One key a layer: np.unique over rows'
    kazan pairs (axis=0) took 6.7 ms for 10,000 rows, more than probing them."""
    tb.rows(rows)
    base = tb.variant.win_kazan + 1
    key = rows[:, 0] * base + rows[:, 1]
    for k in np.unique(key).tolist():
        layer = divmod(k, base)
        if not _holds(tb, layer):
            row = int(np.flatnonzero(key == k)[0])
            _require(tb, layer, f"positions: row {row}: layer {layer_name(*layer)}")


def probe_answer(tb: Tablebase, pos: Position) -> dict[str, Any]:
    found = tb.probe(pos)
    return {"position": str(pos), "category": found.value, "dtz": found.dtz}


def mainline_answer(tb: Tablebase, pos: Position, max_plies: int) -> dict[str, Any]:
    return mainline_report(tb.mainline(pos, max_plies=max_plies))


def _plies(text: str | None) -> int:
    if text is None:
        return DEFAULT_PLIES
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"max_plies must be a whole number, not {text!r}.") from None
    if not 1 <= value <= MAX_PLIES:
        raise UsageError(f"max_plies must be from 1 to {MAX_PLIES}, not {value}.")
    return value


_T = TypeVar("_T")


async def _run(request: web.Request, work: Callable[[], _T]) -> _T:
    """The oracle's blocking work on the pool, bounded by the request timeout."""
    loop = asyncio.get_running_loop()
    try:
        return await asyncio.wait_for(loop.run_in_executor(request.app[POOL], work), request.app[TIMEOUT])
    except asyncio.TimeoutError:
        raise StoreError(
            f"{request.app[TABLEBASE].url} did not answer within {request.app[TIMEOUT]:g} s."
        ) from None


async def get_position(request: web.Request) -> web.Response:
    tb = request.app[TABLEBASE]
    pos = _position(tb, request.query.get("pos"))
    return web.json_response(await _run(request, lambda: position_answer(tb, pos)))


async def get_probe(request: web.Request) -> web.Response:
    tb = request.app[TABLEBASE]
    pos = _position(tb, request.query.get("pos"))
    return web.json_response(await _run(request, lambda: probe_answer(tb, pos)))


async def get_mainline(request: web.Request) -> web.Response:
    tb = request.app[TABLEBASE]
    pos = _position(tb, request.query.get("pos"))
    plies = _plies(request.query.get("max_plies"))
    return web.json_response(await _run(request, lambda: mainline_answer(tb, pos, plies)))


async def post_positions(request: web.Request) -> web.Response:
    tb = request.app[TABLEBASE]
    data = await request.read()
    if request.content_type == "application/octet-stream":
        return web.Response(
            body=await _run(request, lambda: batch_bytes(tb, data)), content_type="application/octet-stream"
        )
    try:
        # orjson: the stdlib's json.loads took 20 ms for 10,000 positions, more than
        # everything else the request costs (benchmarks/serve_bench.py)
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise UsageError("the request body is not JSON.") from None
    answer = await _run(request, lambda: batch_answer(tb, body, data))
    return web.Response(body=orjson.dumps(answer), content_type="application/json")


async def get_stats(request: web.Request) -> web.Response:
    """The whole tablebase's statistics, or one layer's (layer=K1_K2)."""
    tb = request.app[TABLEBASE]
    text = request.query.get("layer")
    if text is None:
        return web.json_response(await _run(request, tb.stats))
    layer = _layer(tb, text)
    return web.json_response(await _run(request, lambda: tb.layer_stats(*layer)))


def layers_answer(tb: Tablebase) -> dict[str, Any]:
    """GET /api/layers' body: every held layer with its size, most stones on the
    board first, and the game's start when the tablebase holds it."""
    held = tb.layers()
    v = tb.variant
    start = None
    try:
        first = Position.start(v)
        start = str(first) if held is None or first.layer in held else None
    except UsageError:  # a variant with no equal-pits start
        pass
    rows = (
        None
        if held is None
        else [
            {
                "layer": layer_name(k1, k2),
                "k1": k1,
                "k2": k2,
                "board_stones": v.board_stones(k1, k2),
                "positions": v.layer_size(k1, k2),
                "distances": tb.has_distances(k1, k2),
            }
            for k1, k2 in sorted(held, key=lambda l: (-v.board_stones(*l), l))
        ]
    )
    return {"variant": v.as_dict(), "start": start, "layers": rows}


def _layer(tb: Tablebase, text: str | None) -> tuple[int, int]:
    """A layer named in a query (layer=K1_K2): one of this game's, and held."""
    layer = parse_layer_name((text or "").strip())
    if layer is None:
        raise UsageError(f"layer must be written K1_K2 (e.g. 8_12), not {text!r}.")
    try:
        tb.variant.check_layer(*layer)
    except UsageError as exc:
        raise UsageError(f"layer {text}: {exc}") from None
    _require(tb, layer, f"layer {layer_name(*layer)}")
    return layer


def random_answer(tb: Tablebase, text: str | None, symmetric: bool, seed: str | None) -> dict[str, Any]:
    """GET /api/random's body: a position drawn uniformly from a held layer among
    those where the side to move has a move (or, if asked, among those with equal
    kazans and equal stones on each side, as the published match's starts)."""
    layer = _layer(tb, text)
    try:
        rng = np.random.default_rng(None if seed is None else int(seed))
    except ValueError:
        raise UsageError(f"seed must be a whole number, not {seed!r}.") from None
    v = tb.variant
    if symmetric:
        return {"position": str(random_symmetric(v, layer, rng)), "layer": layer_name(*layer)}
    size = v.layer_size(*layer)
    for _ in range(RANDOM_TRIES):
        pos = Position.from_rank(v, layer[0], layer[1], int(rng.integers(size)))
        if pos.legal_pits():
            return {"position": str(pos), "layer": layer_name(*layer)}
    raise UsageError(
        f"no position with a move found in layer {layer_name(*layer)} in {RANDOM_TRIES:,} draws."
    )


async def get_layers(request: web.Request) -> web.Response:
    tb = request.app[TABLEBASE]
    return web.json_response(await _run(request, lambda: layers_answer(tb)))


async def get_random(request: web.Request) -> web.Response:
    tb = request.app[TABLEBASE]
    query = request.query
    symmetric = query.get("symmetric", "0").strip().lower() in ("1", "true", "yes")
    return web.json_response(
        await _run(request, lambda: random_answer(tb, query.get("layer"), symmetric, query.get("seed")))
    )


async def get_index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


async def get_health(request: web.Request) -> web.Response:
    tb = request.app[TABLEBASE]
    held = tb.layers()
    return web.json_response(
        {
            "tablebase": tb.url,
            "variant": tb.variant.as_dict(),
            "layers": None if held is None else len(held),
            "reads": tb.reads(),
            "cache_limit_bytes": tb.cache_bytes,
        }
    )


@web.middleware
async def one_sentence_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every failure as {"error": one sentence} with its status; never a traceback."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return web.json_response(
            {"error": f"{exc.reason}: {request.method} {request.path}."}, status=exc.status
        )
    except UsageError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    except NotHeld as exc:
        return web.json_response({"error": str(exc)}, status=404)
    except (FormatError, StoreError) as exc:
        return web.json_response({"error": str(exc)}, status=503)
    except Exception:  # a bug of ours: logged here, one sentence there
        log.exception("request %s %s failed", request.method, request.path_qs)
        return web.json_response(
            {"error": "the server failed on this request; its log says why."}, status=500
        )


def create_app(tb: Tablebase, *, timeout: float = REQUEST_SECONDS, threads: int = 8) -> web.Application:
    app = web.Application(middlewares=[one_sentence_errors], client_max_size=64 * 2**20)
    app[TABLEBASE] = tb
    app[POOL] = ThreadPoolExecutor(threads, thread_name_prefix="oracle")
    app[TIMEOUT] = float(timeout)
    app.router.add_get("/api/position", get_position)
    app.router.add_get("/api/probe", get_probe)
    app.router.add_get("/api/mainline", get_mainline)
    app.router.add_post("/api/positions", post_positions)
    app.router.add_get("/api/stats", get_stats)
    app.router.add_get("/api/health", get_health)
    app.router.add_get("/api/layers", get_layers)
    app.router.add_get("/api/random", get_random)
    app.router.add_get("/", get_index)
    app.router.add_static("/static/", STATIC)

    async def close_pool(app: web.Application) -> None:
        app[POOL].shutdown(wait=False, cancel_futures=True)

    app.on_cleanup.append(close_pool)
    return app


def serve(
    tb: Tablebase,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    timeout: float = REQUEST_SECONDS,
    print_line: Callable[[str], None] = print,
) -> None:
    """Run the server until Ctrl-C or SIGTERM; port 0 takes a free port (the line printed says which)."""

    async def main() -> None:
        runner = web.AppRunner(create_app(tb, timeout=timeout), access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port)
            try:
                await site.start()
            except OSError as exc:
                raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}.") from None
            server = site._server
            assert isinstance(server, asyncio.Server)  # started just now, on TCP
            bound = server.sockets[0].getsockname()[1]
            print_line(
                f"serving {tb.url} ({tb.variant.describe()}) on http://{host}:{bound}/  (Ctrl-C stops)"
            )
            stop = asyncio.Event()
            # SIGTERM (Kubernetes, compose, systemd) stops it as Ctrl-C does: cleanly, exit 0
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
            await stop.wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
