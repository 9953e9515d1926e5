"""The solve on the scheduler's dashboard: a page `/bestemshe`, a JSON endpoint
`/bestemshe/state.json` and Prometheus metrics on `/metrics`.

`BestemsheDashboard` is a scheduler plugin. `solve` registers it at run time
(`Client.register_plugin`; idempotent, so one already there is kept); on a
cluster, start the scheduler with `dask scheduler --preload bestemshe_dist.watch.dashboard`
to have it before any solve connects. The module must be importable on the
scheduler either way.

Where its state comes from (both are needed, either alone degrades gently):

- The driver's reports (progress.py, `SchedulerEvents`): `Client.log_event`
  under the topic `bestemshe`, which the scheduler hands to every plugin's
  `log_event`. `start` carries the plan (variant, pairs, their layers and
  chunk counts, the layers already published with their counts), `round` a
  checkpointed round of a large pair, `layer` a published layer's manifest
  entry (W/D/L counts, rounds, solve seconds), then `finished` or `failed`.
  A layer is *done* only from these: its manifest entry is written first.
- Task transitions, by key: `pair-<a>-<b>` (a small pair),
  `pair-<a>-<b>/round-<r>/chunk-<c>[.<piece>]`, `pair-<a>-<b>/publish-<k1>-<k2>/...`
  and `layer-<k1>-<k2>`. A layer is *running* while one of its tasks is
  processing (or its pair has started rounds), *failed* when one erred
  (after its retries). Chunk transitions also count a round's chunks done.

Everything runs on the scheduler's event loop (transitions, events, the Bokeh
page's periodic refresh, the HTTP handlers), so the state needs no lock; the
Prometheus collector reads a snapshot.

The page is plain: an HTML table in a Bokeh `Div` refreshed every 500 ms.
Each cell carries `data-layer="k1_k2"` and `data-state` so a browser test can
read the grid; the same data is at `/bestemshe/state.json`.
"""

from __future__ import annotations

import html
import json
import logging
import re
import time
from collections.abc import Iterator
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin

from ..naming import layer_name, pair_key, parse_task_key
from .progress import TOPIC, unpublished_decided

logger = logging.getLogger(__name__)

PAGE = "bestemshe"
PLUGIN_NAME = "bestemshe-dashboard"
STATES = ("pending", "running", "done", "failed")
REFRESH_MS = 500
SHOWN_ROUNDS = 10  # the last rounds of a pair in progress shown on the page


def _pair_layers(a: int, b: int) -> list[str]:
    return [layer_name(a, b)] if a == b else [layer_name(a, b), layer_name(b, a)]


class SolveState:
    """What the page shows, built from the driver's events and task transitions."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.solve = "idle"  # idle | running | finished | failed
        self.reason: str | None = None
        self.started: float | None = None
        self.ended: float | None = None
        self.variant: dict[str, int] | None = None
        self.min_captured: int | None = None
        self.kazans: list[int] = []
        self.pairs: dict[str, dict[str, Any]] = {}  # pair key -> {"layers", "layer_size", "chunks"}
        self.layers: dict[str, dict[str, Any]] = {}  # layer name -> {"k1", "k2", "positions", "pair"}
        self.done: dict[str, dict[str, Any]] = {}  # layer name -> summary (counts, seconds, rounds)
        self.failed: set[str] = set()
        self.active: dict[str, set[str]] = {}  # layer name -> keys processing now
        self.started_pairs: set[str] = set()
        self.rounds: dict[str, list[dict[str, Any]]] = {}  # pair key -> [round reports]
        self.chunks_done: dict[tuple[str, int], int] = {}  # (pair key, round) -> chunk tasks finished
        # (pair key, round) -> its chunk tasks ("c" or "c.piece"): a frontier round
        # runs only the chunks that hold sources, split by their sources, so "done
        # of how many" is counted from the keys
        self.chunk_tasks: dict[tuple[str, int], set[str | None]] = {}
        self.rounds_total = 0

    # -- the driver's events --------------------------------------------------------
    def event(self, msg: object) -> None:
        if not isinstance(msg, dict):
            return
        kind = msg.get("event")
        if kind == "start":
            self.reset()
            self.solve, self.started = "running", msg.get("time", time.time())
            self.variant, self.min_captured = msg.get("variant"), msg.get("min_captured")
            self.kazans = list(msg.get("kazans", []))
            for p in msg.get("pairs", []):
                self.pairs[p["pair"]] = {
                    "layers": list(p["layers"]),
                    "layer_size": p["layer_size"],
                    "chunks": p.get("chunks"),
                }
                for name in p["layers"]:
                    k1, k2 = map(int, name.split("_"))
                    self.layers[name] = {"k1": k1, "k2": k2, "positions": p["layer_size"], "pair": p["pair"]}
            for entry in msg.get("published", []):
                self.done[entry["layer"]] = dict(entry, skipped=True)
        elif kind == "round":
            self.rounds.setdefault(msg["pair"], []).append(
                {k: msg.get(k) for k in ("round", "mode", "decided", "undecided", "seconds")}
            )
            self.started_pairs.add(msg["pair"])
            self.rounds_total += 1
        elif kind == "layer":
            self.done[msg["layer"]] = {k: v for k, v in msg.items() if k != "event"}
            self.failed.discard(msg["layer"])
            self.active.pop(msg["layer"], None)
            pair = self.layers.get(msg["layer"], {}).get("pair")
            if pair and all(n in self.done for n in self.pairs[pair]["layers"]):
                self.started_pairs.discard(pair)
        elif kind == "finished":
            self.solve, self.ended = "finished", time.time()
            self.active.clear()
        elif kind == "failed":
            self.solve, self.ended, self.reason = "failed", time.time(), msg.get("reason")

    # -- task transitions -------------------------------------------------------------
    def transition(self, key: object, start: str, finish: str) -> None:
        if not isinstance(key, str):
            return
        task = parse_task_key(key)
        if task is None:
            return
        if task.pair is not None:
            a, b = task.pair
            pair = pair_key(a, b)
            names = [layer_name(*task.layer)] if task.layer is not None else _pair_layers(a, b)
            if task.round is not None:
                r = task.round
                self.chunk_tasks.setdefault((pair, r), set()).add(task.chunk)  # chunk[.piece]
                if start == "processing" and finish == "memory":
                    self.chunks_done[(pair, r)] = self.chunks_done.get((pair, r), 0) + 1
            if finish == "processing" and task.round is not None:
                self.started_pairs.add(pair)
        else:
            assert task.layer is not None  # a key without a pair is a layer's task
            names = [layer_name(*task.layer)]
        for name in names:
            if finish == "processing":
                self.active.setdefault(name, set()).add(key)
            elif start == "processing":
                keys = self.active.get(name)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self.active[name]
            if finish == "erred":
                self.failed.add(name)

    # -- views ------------------------------------------------------------------------
    def layer_state(self, name: str) -> str:
        if name in self.done:
            return "done"
        if name in self.failed:
            return "failed"
        pair = self.layers.get(name, {}).get("pair")
        if name in self.active or (pair is not None and pair in self.started_pairs):
            return "running"
        return "pending"

    def positions_decided(self) -> int:
        """Positions of published layers plus those decided so far in the rounds of
        pairs in progress."""
        published = sum(
            self.layers.get(n, {}).get("positions", d.get("positions", 0)) for n, d in self.done.items()
        )
        in_rounds = sum(
            unpublished_decided(info["layer_size"], info["layers"], self.done, rounds[-1]["undecided"])
            for pair, rounds in self.rounds.items()
            if (info := self.pairs.get(pair)) is not None
        )
        return published + in_rounds

    def snapshot(self) -> dict[str, Any]:
        names = set(self.layers) | set(self.done) | set(self.active) | self.failed
        layers: list[dict[str, Any]] = []
        for name in sorted(names, key=lambda n: tuple(map(int, n.split("_")))):
            k1, k2 = map(int, name.split("_"))
            row: dict[str, Any] = {
                "layer": name,
                "k1": k1,
                "k2": k2,
                "state": self.layer_state(name),
                "positions": self.layers.get(name, {}).get("positions"),
            }
            done = self.done.get(name)
            if done:
                row.update(
                    counts=done.get("counts"),
                    seconds=done.get("seconds"),
                    rounds=done.get("rounds"),
                    skipped=bool(done.get("skipped")),
                )
            layers.append(row)
        counts = dict.fromkeys(STATES, 0)
        for row in layers:
            counts[row["state"]] += 1
        in_progress: list[dict[str, Any]] = []
        for pair, info in self.pairs.items():
            if all(n in self.done for n in info["layers"]):
                continue
            if pair not in self.started_pairs and not any(n in self.active for n in info["layers"]):
                continue
            rounds = self.rounds.get(pair, [])
            current = len(rounds)
            in_progress.append(
                {
                    "pair": pair,
                    "layers": info["layers"],
                    "rounds": rounds,
                    "round": current if info.get("chunks") else None,
                    "chunks": info.get("chunks"),
                    "chunks_done": self.chunks_done.get((pair, current), 0),
                    "chunk_tasks": len(self.chunk_tasks.get((pair, current), ())),
                }
            )
        return {
            "solve": self.solve,
            "reason": self.reason,
            "started": self.started,
            "ended": self.ended,
            "variant": self.variant,
            "min_captured": self.min_captured,
            "kazans": self.kazans,
            "layers": layers,
            "counts": counts,
            "total_layers": len(layers),
            "positions": sum(p["layer_size"] * len(p["layers"]) for p in self.pairs.values()),
            "positions_decided": self.positions_decided(),
            "rounds_total": self.rounds_total,
            "pairs_in_progress": in_progress,
        }


# -- the page ---------------------------------------------------------------------------
_STYLE = """
<style>
 .bst { font-family: system-ui, sans-serif; font-size: 13px; }
 .bst table.grid { border-collapse: collapse; margin: 8px 0; }
 .bst table.grid td, .bst table.grid th { border: 1px solid #ccc; padding: 2px 4px;
   min-width: 64px; height: 38px; text-align: center; vertical-align: middle; font-size: 11px; }
 .bst th { background: #f4f4f4; }
 .bst td.pending { background: #eeeeee; color: #888; }
 .bst td.running { background: #ffd966; }
 .bst td.done { background: #9fd49f; }
 .bst td.failed { background: #f08080; }
 .bst td.none { background: #fff; border-color: #f4f4f4; }
 .bst table.pairs td, .bst table.pairs th { border: 1px solid #ccc; padding: 2px 6px; }
 .bst .legend span { display: inline-block; padding: 2px 8px; margin-right: 4px; }
</style>
"""


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole else "-"


def render(snap: dict[str, Any]) -> str:
    """The page's HTML from a snapshot (pure: easy to test)."""
    out = [_STYLE, '<div class="bst">']
    v = snap.get("variant")
    title = (
        f"Bestemshe solve: {v['stones']} stones, {v['pits']} pits per side, "
        f"k1 + k2 &ge; {snap['min_captured']}"
        if v
        else "Bestemshe solve: waiting for a solve to start"
    )
    out.append(f"<h3>{title}</h3>")
    c = snap["counts"]
    out.append(
        f'<p id="bestemshe-summary" data-solve="{snap["solve"]}">solve: <b>{snap["solve"]}</b>'
        + (f" ({html.escape(str(snap['reason']))})" if snap.get("reason") else "")
        + f" &middot; layers done <b>{c['done']}</b> of {snap['total_layers']}, running {c['running']},"
        f" failed {c['failed']} &middot; positions decided {snap['positions_decided']:,}"
        f" of {snap['positions']:,} &middot; rounds {snap['rounds_total']}</p>"
    )
    out.append(
        '<p class="legend"><span class="pending" style="background:#eee">pending</span>'
        '<span style="background:#ffd966">running</span><span style="background:#9fd49f">done</span>'
        '<span style="background:#f08080">failed</span> cells: win / draw / loss share for '
        "the side to move, solve time</p>"
    )
    rows = {r["layer"]: r for r in snap["layers"]}
    # rows and columns that hold a layer of the solve (an endgame is a corner of the grid)
    row_kazans = sorted({r["k1"] for r in snap["layers"]})
    kazans = sorted({r["k2"] for r in snap["layers"]})
    out.append(
        '<table class="grid" id="bestemshe-grid"><tr><th>k1 \\ k2</th>'
        + "".join(f"<th>{k2}</th>" for k2 in kazans)
        + "</tr>"
    )
    for k1 in row_kazans:
        cells = [f"<th>{k1}</th>"]
        for k2 in kazans:
            r = rows.get(layer_name(k1, k2))
            if r is None:
                cells.append('<td class="none"></td>')
                continue
            text = r["state"]
            tip = f"layer {r['layer']}: {r['state']}"
            if r["state"] == "done" and r.get("counts"):
                n = sum(r["counts"].values())
                w, d, l = (r["counts"][k] for k in ("win", "draw", "loss"))
                secs = r.get("seconds")
                text = f"W {_pct(w, n)} D {_pct(d, n)}<br>L {_pct(l, n)}" + (
                    f" &middot; {secs:.1f}s" if secs is not None else ""
                )
                tip += f", {n:,} positions, win {w:,} draw {d:,} loss {l:,}"
            cells.append(
                f'<td class="{r["state"]}" data-layer="{r["layer"]}" data-state="{r["state"]}"'
                f' title="{tip}">{text}</td>'
            )
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    pairs = snap["pairs_in_progress"]
    out.append("<h4>Pairs in progress</h4>")
    if not pairs:
        out.append("<p>none</p>")
    else:
        out.append(
            '<table class="pairs"><tr><th>pair</th><th>round</th><th title="a frontier round runs only the chunks that hold sources">chunk tasks done</th>'
            "<th>decided per round</th></tr>"
        )
        for p in pairs:
            recent = p["rounds"][-SHOWN_ROUNDS:]
            per_round = ("&hellip; " if len(p["rounds"]) > len(recent) else "") + (
                ", ".join(f"{r['round']}: {r['decided']:,}" for r in recent) or "-"
            )
            rnd = "-" if p["round"] is None else p["round"]
            tasks = p.get("chunk_tasks") or p["chunks"]
            chunks = "-" if not p["chunks"] else f"{p['chunks_done']}/{tasks}"
            out.append(
                f'<tr data-pair="{p["pair"]}"><td>{p["pair"]}</td><td>{rnd}</td>'
                f"<td>{chunks}</td><td>{per_round}</td></tr>"
            )
        out.append("</table>")
    out.append("</div>")
    return "".join(out)


# -- Prometheus -------------------------------------------------------------------------
class _Collector:
    def __init__(self, state: SolveState) -> None:
        self.state = state

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        snap = self.state.snapshot()
        layers = GaugeMetricFamily(
            "bestemshe_layers", "Layers of the current solve by state", labels=["state"]
        )
        for state in STATES:
            layers.add_metric([state], snap["counts"][state])
        yield layers
        yield GaugeMetricFamily(
            "bestemshe_positions", "Positions in the layers of the current solve", value=snap["positions"]
        )
        yield GaugeMetricFamily(
            "bestemshe_positions_decided",
            "Positions decided: published layers and rounds of pairs in progress",
            value=snap["positions_decided"],
        )
        yield CounterMetricFamily(
            "bestemshe_rounds", "Rounds of large pairs checkpointed in this solve", value=snap["rounds_total"]
        )
        yield GaugeMetricFamily(
            "bestemshe_pairs_in_progress", "Pairs being solved now", value=len(snap["pairs_in_progress"])
        )


# -- the plugin -------------------------------------------------------------------------
class BestemsheDashboard(SchedulerPlugin):
    name = PLUGIN_NAME
    idempotent = True  # a plugin already there (a preload, an earlier solve) is kept

    def __init__(self) -> None:
        self.state = SolveState()
        self._scheduler: Any = None
        self._bokeh: Any = None
        self._collector: _Collector | None = None

    def __getstate__(self) -> dict[str, bool]:  # sent to the scheduler fresh: no state, no server objects
        return {"fresh": True}  # (a falsy state would skip __setstate__)

    def __setstate__(self, _: object) -> None:
        type(self).__init__(self)

    # -- scheduler hooks ----------------------------------------------------------------
    async def start(self, scheduler: Any) -> None:
        self._scheduler = scheduler
        app = getattr(scheduler, "http_application", None)
        if app is not None:
            app.add_handlers(r".*$", [(rf"/{PAGE}/state\.json", StateHandler, {"plugin": self})])
            self._add_page(scheduler, app)
        self._add_metrics()

    async def close(self) -> None:
        if self._collector is not None:
            try:
                from prometheus_client import REGISTRY

                REGISTRY.unregister(self._collector)
            except (ImportError, KeyError):
                pass
            self._collector = None
        if self._bokeh is not None and self._scheduler is not None:
            try:
                self._scheduler.http_application.applications.remove(self._bokeh)
                self._bokeh.stop()
            except Exception:
                pass
            self._bokeh = None

    def transition(self, key: object, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        self.state.transition(key, start, finish)

    def log_event(self, topic: object, msg: object) -> None:
        if topic == TOPIC or (isinstance(topic, (list, tuple)) and TOPIC in topic):
            self.state.event(msg)

    # -- the parts ----------------------------------------------------------------------
    def _add_page(self, scheduler: Any, app: Any) -> None:
        server = getattr(scheduler, "http_server", None)
        if server is None or not hasattr(app, "add_application"):
            return
        try:
            from distributed.dashboard.core import BokehApplication
            from distributed.dashboard.scheduler import template_variables
            from tornado.ioloop import IOLoop
        except ImportError as exc:  # no (suitable) bokeh: JSON and metrics only
            logger.warning("bestemshe dashboard page unavailable: %s", exc)
            return
        variables = template_variables(scheduler)  # memoized per scheduler: shared by every page
        if PAGE not in variables["pages"]:
            variables["pages"].append(PAGE)  # the navbar link on every dashboard page
        state = self.state

        def page(scheduler: Any, extra: dict[str, Any], doc: Any) -> None:
            make_document(state, extra, doc)

        bokeh = BokehApplication({f"/{PAGE}": page}, scheduler, template_variables=variables)
        app.add_application(bokeh)
        bokeh.initialize(IOLoop.current())
        bokeh.start()
        self._bokeh = bokeh

    def _add_metrics(self) -> None:
        try:
            from prometheus_client import REGISTRY
        except ImportError:
            return
        collector = _Collector(self.state)
        try:
            REGISTRY.register(collector)
        except ValueError as exc:  # another solve's plugin in this process holds the names
            logger.warning("bestemshe metrics not registered: %s", exc)
            return
        self._collector = collector


def make_document(state: SolveState, extra: dict[str, Any], doc: Any) -> None:
    """The Bokeh document of the page: one Div, refreshed while the page is open."""
    from bokeh.models import Div
    from distributed.dashboard.components.scheduler import BOKEH_THEME, env

    div = Div(text=render(state.snapshot()), name="bestemshe-grid", sizing_mode="stretch_width")

    def refresh() -> None:
        text = render(state.snapshot())
        if text != div.text:
            div.text = text

    doc.title = "Dask: Bestemshe solve"
    doc.add_root(div)
    doc.add_periodic_callback(refresh, REFRESH_MS)
    doc.template = env.get_template("simple.html")
    doc.template_variables.update(extra)
    doc.theme = BOKEH_THEME


# The handler of /bestemshe/state.json; None without tornado.
StateHandler: type[Any] | None
try:
    from tornado import web

    class _StateHandler(web.RequestHandler):
        def initialize(self, plugin: BestemsheDashboard) -> None:
            self.plugin = plugin

        def get(self) -> None:
            self.set_header("Content-Type", "application/json")
            self.set_header("Cache-Control", "no-store")
            self.write(json.dumps(self.plugin.state.snapshot()))

    StateHandler = _StateHandler
except ImportError:  # pragma: no cover - tornado comes with distributed
    StateHandler = None


def register(client: Any) -> str | None:
    """Add the plugin to the client's scheduler (kept if already there). Returns None,
    or one sentence saying why the page is unavailable."""
    try:
        client.register_plugin(BestemsheDashboard(), name=PLUGIN_NAME)
    except Exception as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"the dashboard page is unavailable ({reason.rstrip('.')})."
    return None


def page_link(client: Any, host: str | None = None) -> str | None:
    """The page's URL on the client's scheduler dashboard, or None without one. `host`
    replaces the link's host (a local cluster's dashboard bound to loopback is
    linked with the machine's name by Dask)."""
    try:
        link = client.dashboard_link
    except Exception:
        return None
    if not link:
        return None
    base = link.rsplit("/", 1)[0] if link.rstrip("/").endswith("status") else link.rstrip("/")
    if host:
        base = re.sub(r"^(\w+://)[^/:]+", lambda m: m.group(1) + host, base)
    return f"{base}/{PAGE}"


async def dask_setup(scheduler: Any) -> None:
    """`dask scheduler --preload bestemshe_dist.watch.dashboard`: the page from the start."""
    scheduler.add_plugin(BestemsheDashboard(), name=PLUGIN_NAME)
