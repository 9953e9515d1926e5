"""What a solve reports while it runs, and who listens.

The driver (driver.py) calls a `Progress` object when the solve has started
(the plan, the layers already published), when it has found what an earlier run
left (the layers published, the pairs in progress) and when a pair's host arrays
are rebuilt from its checkpoints, when a round of a large pair is checkpointed,
when a layer is published (its manifest entry), and when the solve has finished
or failed. Listeners:

- `ProgressView` (the CLI): a progress bar on stderr when it is a terminal
  (layers done of total, positions decided, rate, ETA), plain timestamped
  lines otherwise; the driver's log lines go through it too.
- `SchedulerEvents`: forwards each report as a small dict to the scheduler's
  event log under the topic `bestemshe` (`Client.log_event`), where the
  dashboard plugin (dashboard.py) and anyone else can read it.
- `Tee`: several of them at once.

Reports are small: layer coordinates, counts, seconds; never layer data.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Container
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from ..naming import layer_name

if TYPE_CHECKING:
    from ..game.dag import Plan

TOPIC = "bestemshe"


class Summary(Protocol):
    """What listeners read of a finished solve's summary (driver.SolveSummary,
    which watch/ may not import)."""

    @property
    def seconds(self) -> float: ...

    @property
    def positions(self) -> int: ...


class Progress:
    """A listener that ignores everything; subclasses override what they need."""

    def started(
        self, plan: Plan, published: dict[tuple[int, int], dict[str, Any]], chunks: dict[str, int]
    ) -> None:
        """plan: the Plan; published: {layer: manifest entry} kept from earlier runs;
        chunks: {pair key: chunk tasks per round} for the pairs solved in rounds."""

    def round_done(
        self, pair_key: str, round_: int, mode: str, decided: int, undecided: int, seconds: float
    ) -> None:
        """A round of a large pair is checkpointed: `decided` positions newly decided,
        about `undecided` left in the pair."""

    def layer_done(self, entry: dict[str, Any]) -> None:
        """A layer is published; entry is its manifest entry."""

    def resumed(self, layers: int, pairs: list[dict[str, Any]], rebuilding: set[str]) -> None:
        """The solve found `layers` of its layers published and `pairs` in progress
        ({"pair", "after_round", "checkpointed_at"}); those in `rebuilding` rebuild
        their host arrays from the checkpoints before their next round."""

    def rebuilt(self, pair_key: str, seconds: float) -> None:
        """A pair's host arrays were rebuilt from its checkpoints in `seconds`."""

    def finished(self, summary: Summary) -> None:
        """The solve ended well (summary: driver.SolveSummary)."""

    def failed(self, reason: str) -> None:
        """The solve stopped on an error (one sentence)."""


class Tee(Progress):
    """Every event to each of several listeners, in order."""

    def __init__(self, *listeners: Progress | None) -> None:
        self.listeners = [l for l in listeners if l is not None]

    def _each(self, event: str, args: tuple[Any, ...]) -> None:
        for listener in self.listeners:
            getattr(listener, event)(*args)

    def started(self, *args: Any) -> None:
        self._each("started", args)

    def round_done(self, *args: Any) -> None:
        self._each("round_done", args)

    def layer_done(self, *args: Any) -> None:
        self._each("layer_done", args)

    def resumed(self, *args: Any) -> None:
        self._each("resumed", args)

    def rebuilt(self, *args: Any) -> None:
        self._each("rebuilt", args)

    def finished(self, *args: Any) -> None:
        self._each("finished", args)

    def failed(self, *args: Any) -> None:
        self._each("failed", args)


def entry_summary(entry: dict[str, Any]) -> dict[str, Any]:
    """The part of a manifest entry the dashboard shows."""
    return {
        "layer": layer_name(entry["k1"], entry["k2"]),
        "k1": entry["k1"],
        "k2": entry["k2"],
        "positions": entry["positions"],
        "counts": dict(entry["counts"]),
        "rounds": entry.get("rounds"),
        "seconds": entry.get("solve_seconds"),
    }


def plan_message(
    plan: Plan, published: dict[tuple[int, int], dict[str, Any]], chunks: dict[str, int]
) -> dict[str, Any]:
    """The `start` event: everything the dashboard needs to draw the grid."""
    return {
        "event": "start",
        "time": time.time(),
        "variant": plan.variant.as_dict(),
        "min_captured": plan.min_captured,
        "kazans": list(plan.variant.kazans),
        "pairs": [
            {
                "pair": p.key,
                "layers": [layer_name(*l) for l in p.layers],
                "layer_size": p.layer_size,
                "chunks": chunks.get(p.key),
            }
            for p in plan.pairs
        ],
        "published": [entry_summary(e) for e in published.values()],
    }


class SchedulerEvents(Progress):
    """Forwards the reports to the scheduler's event log (topic `bestemshe`). A
    failure to send never stops the solve: the dashboard is a convenience."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def _send(self, msg: dict[str, Any]) -> None:
        try:
            self.client.log_event(TOPIC, msg)
        except Exception:  # a closing client, a lost scheduler: the solve reports it
            pass

    def started(
        self, plan: Plan, published: dict[tuple[int, int], dict[str, Any]], chunks: dict[str, int]
    ) -> None:
        self._send(plan_message(plan, published, chunks))

    def round_done(
        self, pair_key: str, round_: int, mode: str, decided: int, undecided: int, seconds: float
    ) -> None:
        self._send(
            {
                "event": "round",
                "pair": pair_key,
                "round": round_,
                "mode": mode,
                "decided": int(decided),
                "undecided": int(undecided),
                "seconds": float(seconds),
            }
        )

    def layer_done(self, entry: dict[str, Any]) -> None:
        self._send({"event": "layer", **entry_summary(entry)})

    def finished(self, summary: Summary) -> None:
        self._send({"event": "finished", "seconds": summary.seconds, "positions": summary.positions})

    def failed(self, reason: str) -> None:
        self._send({"event": "failed", "reason": reason})


def unpublished_decided(layer_size: int, layers: list[str], done: Container[str], undecided: int) -> int:
    """Positions decided in a pair's layers not yet published, `undecided` being
    its last round's figure. Once one of its layers is published the pair's
    rounds are over, so its other layers are decided whole (what is left
    undecided is a draw); before that, its positions less the undecided ones (a
    frontier round may count a position twice; the undecided figure is exact)."""
    left = sum(1 for name in layers if name not in done)
    if left < len(layers):
        return layer_size * left
    return max(layer_size * left - undecided, 0)


def format_duration(seconds: float) -> str:
    seconds = round(max(seconds, 0))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class ProgressView(Progress):
    """The CLI's view of a solve on one stream (stderr).

    On a terminal: log lines scroll above a progress bar redrawn in place. Else:
    timestamped lines, `[   12.3s] ...`, including a `progress:` line after each
    layer or round (at most one every `every` seconds, and the last one). Quiet:
    nothing at all."""

    WIDTH = 24

    def __init__(
        self,
        stream: TextIO | None = None,
        tty: bool | None = None,
        quiet: bool = False,
        every: float = 2.0,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.quiet = quiet
        self.every = every
        self.clock = clock
        self.t0 = clock()
        self.lock = threading.Lock()
        self.bar_shown = False
        self.last_line: float | None = None
        self.total_layers = 0
        self.done_layers = 0
        self.total_positions = 0  # of the layers this run solves
        self.published_positions = 0
        self.undecided: dict[str, int] = {}  # pair key -> undecided after its last round
        self.layer_size: dict[str, int] = {}  # pair key -> positions in each of its layers
        self.pair_layers: dict[str, list[str]] = {}  # pair key -> layer names
        self.done: set[str] = set()
        self.solve_t0: float | None = None
        self.closed = False

    # -- output ---------------------------------------------------------------------
    def _stamp(self) -> str:
        return f"[{self.clock() - self.t0:8.1f}s]"

    def _clear_bar(self) -> None:
        if self.bar_shown:
            self.stream.write("\r\033[K")
            self.bar_shown = False

    def log(self, line: str) -> None:
        """One timestamped line (above the bar on a terminal)."""
        if self.quiet:
            return
        with self.lock:
            self._clear_bar()
            self.stream.write(f"{self._stamp()} {line}\n")
            if self.tty and self.solve_t0 is not None and not self.closed:
                self._draw_bar()
            self.stream.flush()

    # -- figures --------------------------------------------------------------------
    @property
    def decided(self) -> int:
        in_rounds = sum(
            unpublished_decided(self.layer_size[pair], self.pair_layers[pair], self.done, undecided)
            for pair, undecided in self.undecided.items()
        )
        return min(self.published_positions + in_rounds, self.total_positions)

    def rate(self) -> float:
        elapsed = self.clock() - self.solve_t0 if self.solve_t0 is not None else 0.0
        return self.decided / elapsed if elapsed > 0 else 0.0

    def eta(self) -> str:
        rate = self.rate()
        left = self.total_positions - self.decided
        if left <= 0:
            return "0:00"
        return format_duration(left / rate) if rate > 0 else "?"

    def bar_text(self) -> str:
        share = self.decided / self.total_positions if self.total_positions else 1.0
        filled = round(self.WIDTH * min(share, 1.0))
        bar = "#" * filled + "." * (self.WIDTH - filled)
        return (
            f"[{bar}] {self.done_layers}/{self.total_layers} layers, "
            f"{self.decided:,}/{self.total_positions:,} positions, "
            f"{self.rate():,.0f}/s, ETA {self.eta()}"
        )

    def _draw_bar(self) -> None:
        self.stream.write("\r\033[K" + self.bar_text())
        self.bar_shown = True

    def _update(self, force: bool = False) -> None:
        if self.quiet or self.closed:
            return
        with self.lock:
            if self.tty:
                self._draw_bar()
            else:
                now = self.clock()
                if not force and self.last_line is not None and now - self.last_line < self.every:
                    return
                self.last_line = now
                self.stream.write(f"{self._stamp()} progress: {self.bar_text()}\n")
            self.stream.flush()

    # -- reports --------------------------------------------------------------------
    def started(
        self, plan: Plan, published: dict[tuple[int, int], dict[str, Any]], chunks: dict[str, int]
    ) -> None:
        self.solve_t0 = self.clock()
        self.total_layers = len(plan.layers)
        for p in plan.pairs:
            names = [layer_name(*l) for l in p.layers]
            self.pair_layers[p.key] = names
            self.layer_size[p.key] = p.layer_size
        # A folder may hold layers this plan does not solve (--pair's dependencies).
        planned = {layer_name(*l) for l in plan.layers}
        self.done = {layer_name(*l) for l in published} & planned
        self.done_layers = len(self.done)
        self.total_positions = sum(
            p.layer_size for p in plan.pairs for l in p.layers if layer_name(*l) not in self.done
        )
        self._update(force=True)

    def round_done(
        self, pair_key: str, round_: int, mode: str, decided: int, undecided: int, seconds: float
    ) -> None:
        if pair_key in self.layer_size:
            self.undecided[pair_key] = int(undecided)
        self._update()

    def layer_done(self, entry: dict[str, Any]) -> None:
        name = layer_name(entry["k1"], entry["k2"])
        if name in self.done:
            return
        self.done.add(name)
        self.done_layers += 1
        self.published_positions += entry["positions"]
        self._update(force=self.done_layers == self.total_layers)

    def finished(self, summary: Summary) -> None:
        self.close()

    def failed(self, reason: str) -> None:
        self.close()

    def close(self) -> None:
        """End the bar's line (a terminal) so that what follows starts clean."""
        with self.lock:
            self.closed = True
            if self.bar_shown:
                self.stream.write("\n")
                self.bar_shown = False
                self.stream.flush()
