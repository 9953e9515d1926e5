"""The run log of a tablebase: `.bestemshe/runs.jsonl`, one line a solve run.

A long solve is run many times: a batch system ends it at its walltime, a
machine restarts, someone presses Ctrl-C, and the same command resumes it. The
run log says what each run did: when it started and ended, how it ended, what it
resumed from, the layers and rounds it finished, and the most memory it saw.

A run's line is written when it starts, rewritten as it goes (at most every
BEAT_SECONDS, and whenever a layer is published) and when it ends. A run killed
outright (SIGKILL, the OOM killer, a machine gone) never writes its end: the next
run finds its line open and closes it as `lost`, ended when it was last seen.
Only the holder of the output's lease writes the log (driver.solve), so whole-file
rewrites never race; each rewrite replaces the file at once (Store.write_bytes).

The log holds no credentials: the output is named by its redacted URL.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import StoreError, Terminated, first_line
from ..naming import RUN_LOG, counted
from .progress import Progress, Summary

if TYPE_CHECKING:
    from ..data.store import Store

# How often a running solve rewrites its line, so that a run killed outright is
# known to have lived until at most this long before its last `last_seen`.
BEAT_SECONDS = 30.0
# How a run ended, as the log spells it.
FINISHED, FAILED, INTERRUPTED, TERMINATED, LOST, RUNNING = (
    "finished",
    "failed",
    "interrupted",
    "terminated",
    "lost",
    "running",
)


def read_runs(store: Store) -> list[dict[str, Any]]:
    """Every run's record, oldest first (none when the log is missing); a line
    that is not a JSON object (a hand edit) is skipped."""
    if not store.exists(RUN_LOG):
        return []
    runs: list[dict[str, Any]] = []
    for line in store.read_bytes(RUN_LOG).decode(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            runs.append(record)
    return runs


def close_lost(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs left open by a process that was killed outright, closed as lost at the
    time they were last seen (the records are changed in place and returned)."""
    lost = []
    for run in runs:
        if run.get("how") == RUNNING:
            run["how"] = LOST
            run["ended"] = run.get("last_seen", run.get("started"))
            run["seconds"] = round(float(run["ended"]) - float(run["started"]), 1)
            lost.append(run)
    return lost


class RunLog(Progress):
    """This run's line of the log, kept current from the solve's progress reports.

    `sample` (optional) returns what the hosts hold now: {"worker_rss_bytes",
    "host_arrays_bytes"}; it is called at each beat, from the log's own thread."""

    def __init__(
        self,
        store: Store,
        describe: dict[str, Any],
        sample: Callable[[], dict[str, int]] | None = None,
        log: Callable[[str], object] = lambda line: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.sample = sample
        self.log = log
        self.rebuilding: set[str] = set()  # resumed pairs whose rebuild the resume line awaits
        self.clock = clock
        self.lock = threading.Lock()
        self.runs = read_runs(store)
        close_lost(self.runs)
        now = clock()
        self.record: dict[str, Any] = {
            "run": len(self.runs) + 1,
            "id": uuid.uuid4().hex[:12],
            "host": socket.gethostname(),
            "pid": os.getpid(),
            **describe,
            "started": round(now, 3),
            "last_seen": round(now, 3),
            "ended": None,
            "seconds": 0.0,
            "how": RUNNING,
            "reason": None,
            "resumed": None,
            "layers_done": 0,
            "positions_done": 0,
            "rounds_done": 0,
            "peak": {"worker_rss_bytes": 0, "host_arrays_bytes": 0, "machine_used_bytes": 0},
        }
        self.runs.append(self.record)
        self._written = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the file -----------------------------------------------------------------------
    def write(self, force: bool = False) -> None:
        """Rewrite the log with this run's line as it stands now (at most every
        BEAT_SECONDS unless forced). A failed write is retried at the next beat: the
        log must never stop a solve."""
        with self.lock:
            now = self.clock()
            if not force and now - self._written < BEAT_SECONDS:
                return
            self.record["last_seen"] = round(now, 3)
            if self.record["ended"] is None:
                self.record["seconds"] = round(now - self.record["started"], 1)
            text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in self.runs)
            try:
                self.store.write_bytes(RUN_LOG, text.encode())
                self._written = now
            except StoreError:
                pass

    def beat(self) -> None:
        """Take a memory sample and rewrite the line (the log's thread, every beat)."""
        self._sample()
        self.write(force=True)

    def _sample(self, hosts: bool = True) -> None:
        """The machine's memory in use now, and (`hosts`) what the hosts hold."""
        peak = self.record["peak"]
        try:
            import psutil

            memory = psutil.virtual_memory()
            used = int(memory.total - memory.available)
        except Exception:  # no psutil here: the hosts' figures still count
            used = 0
        found = {"machine_used_bytes": used}
        if hosts and self.sample is not None:
            try:
                found.update(self.sample())
            except Exception:  # a worker lost meanwhile: the next beat samples again
                pass
        with self.lock:
            for key, value in found.items():
                peak[key] = max(int(peak.get(key, 0)), int(value))

    def __enter__(self) -> RunLog:
        self._sample()
        self.write(force=True)
        self._thread = threading.Thread(target=self._beat_loop, name="bestemshe-runlog", daemon=True)
        self._thread.start()
        return self

    def _beat_loop(self) -> None:
        while not self._stop.wait(BEAT_SECONDS):
            self.beat()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if isinstance(exc, KeyboardInterrupt):  # Ctrl-C or SIGTERM: a stop, not a failure
            self.end(TERMINATED if isinstance(exc, Terminated) else INTERRUPTED, None)
        elif self.record["how"] == RUNNING:  # no report: done, or an error before the driver ran
            if exc is None:
                self.end(FINISHED, None)
            else:
                self.end(FAILED, first_line(exc))

    def end(self, how: str, reason: str | None) -> None:
        # A run that failed may have lost its cluster: asking the hosts could hang.
        self._sample(hosts=how == FINISHED)
        with self.lock:
            now = self.clock()
            self.record.update(
                how=how, reason=reason, ended=round(now, 3), seconds=round(now - self.record["started"], 1)
            )
        self.write(force=True)

    # -- what the solve reports -----------------------------------------------------------
    @property
    def previous(self) -> dict[str, Any] | None:
        """The run before this one, closed (lost when it was killed outright)."""
        return self.runs[-2] if len(self.runs) > 1 else None

    def resumed(self, layers: int, pairs: list[dict[str, Any]], rebuilding: set[str]) -> None:
        """What this run found done. The resume line is said once every pair in
        `rebuilding` has its host arrays back (at once when none has to)."""
        if not layers and not pairs:
            return  # a fresh start resumes nothing
        found = [
            {
                "pair": p["pair"],
                "after_round": p["after_round"],
                "publishing": bool(p.get("publishing")),
                # A pair whose rounds were over lost no round, only publication tasks.
                "lost_seconds": None
                if p.get("publishing")
                else lost_seconds(self.previous, p.get("checkpointed_at")),
            }
            for p in pairs
        ]
        with self.lock:
            self.record["resumed"] = {"layers_published": layers, "pairs": found}
            self.rebuilding = set(rebuilding)
        self.write(force=True)
        self._say_resumed()

    def rebuilt(self, pair_key: str, seconds: float) -> None:
        with self.lock:
            if pair_key not in self.rebuilding:
                return  # a rebuild later in the run (a host lost): the round's own line says it
            self.rebuilding.discard(pair_key)
            for p in self.record["resumed"]["pairs"]:
                if p["pair"] == pair_key:
                    p["rebuilt_seconds"] = round(seconds, 1)
        self.write(force=True)
        self._say_resumed()

    def _say_resumed(self) -> None:
        with self.lock:
            resumed = self.record["resumed"]
            if self.rebuilding or resumed is None:
                return
        self.log(resume_line(resumed["layers_published"], resumed["pairs"]))

    def round_done(
        self, pair_key: str, round_: int, mode: str, decided: int, undecided: int, seconds: float
    ) -> None:
        with self.lock:
            self.record["rounds_done"] += 1
        self.write()

    def layer_done(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.record["layers_done"] += 1
            self.record["positions_done"] += int(entry["positions"])
        self.write(force=True)

    def finished(self, summary: Summary) -> None:
        self.end(FINISHED, None)

    def failed(self, reason: str) -> None:
        """A failure (a signal's stop is named as such on leaving the `with`)."""
        self.end(FAILED, reason)


def lost_seconds(previous: dict[str, Any] | None, checkpointed_at: float | None) -> float | None:
    """About how much of a pair's work in flight an interruption threw away: from
    its last checkpoint to when the run that held it was last seen."""
    if previous is None or checkpointed_at is None:
        return None
    end = previous.get("ended") or previous.get("last_seen")
    return None if end is None else round(max(0.0, float(end) - float(checkpointed_at)), 1)


def resume_line(layers: int, pairs: list[dict[str, Any]]) -> str:
    """`resumed: N layers published, pair-A-B after round R, rebuilt in S s` (every
    pair in progress; what each interruption threw away when it is known)."""
    parts = [f"resumed: {counted(layers, 'layer')} published"]
    if not pairs:
        parts.append("no pair in progress")
    for p in pairs:
        text = f"{p['pair']} after round {p['after_round']}"
        if p.get("publishing"):
            text += " (its rounds over: publishing)"
        elif p.get("lost_seconds") is not None:
            text += f" (about {p['lost_seconds']:.0f} s of work in flight redone)"
        if p.get("rebuilt_seconds") is not None:
            text += f", rebuilt in {p['rebuilt_seconds']:.1f} s"
        parts.append(text)
    return ", ".join(parts)


def hms(seconds: float) -> str:
    """A duration as `7h41m02s`."""
    s = round(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s"


def utc(t: float | None) -> str:
    """A time of the log as `2026-12-04 15:40:02` (UTC), `-` for none."""
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(t)))


def summarise(runs: list[dict[str, Any]], now: float | None = None) -> dict[str, Any]:
    """The runs' totals for `status`: how many, how they ended, wall time in all,
    the most memory any saw."""
    now = time.time() if now is None else now
    how: dict[str, int] = {}
    for r in runs:
        how[r.get("how", LOST)] = how.get(r.get("how", LOST), 0) + 1
    return {
        "runs": len(runs),
        "how": how,
        "seconds": round(sum(float(r.get("seconds") or 0.0) for r in runs), 1),
        "layers_done": sum(int(r.get("layers_done") or 0) for r in runs),
        "rounds_done": sum(int(r.get("rounds_done") or 0) for r in runs),
        "peak_machine_used_bytes": max(
            (int(r.get("peak", {}).get("machine_used_bytes", 0)) for r in runs), default=0
        ),
        "peak_host_arrays_bytes": max(
            (int(r.get("peak", {}).get("host_arrays_bytes", 0)) for r in runs), default=0
        ),
    }


def format_runs(runs: list[dict[str, Any]]) -> list[str]:
    """The run log as `status` prints it: a line of totals, then a line a run."""
    if not runs:
        return ["runs: none logged"]
    s = summarise(runs)
    ends = ", ".join(f"{n} {how}" for how, n in sorted(s["how"].items()))
    lines = [
        f"runs: {s['runs']} ({ends}), {hms(s['seconds'])} of wall time in all, "
        f"{counted(s['layers_done'], 'layer')} and {counted(s['rounds_done'], 'round')} done; "
        f"most memory used on a machine: {s['peak_machine_used_bytes'] / 2**30:.2f} GiB"
    ]
    for r in runs:
        peak = r.get("peak", {})
        resumed = r.get("resumed") or {}
        how = r.get("how", LOST) + (f" ({r['reason']})" if r.get("reason") else "")
        lines.append(
            f"   run {r.get('run')}: {utc(r.get('started'))} to {utc(r.get('ended') or r.get('last_seen'))} UTC, "
            f"{hms(float(r.get('seconds') or 0))}, {how}; "
            + (f"resumed from {counted(resumed.get('layers_published', 0), 'layer')}, " if resumed else "")
            + f"{counted(int(r.get('layers_done') or 0), 'layer')} and "
            f"{counted(int(r.get('rounds_done') or 0), 'round')} done, "
            f"peak {int(peak.get('machine_used_bytes', 0)) / 2**30:.2f} GiB used"
        )
    return lines
