"""`bestemshe-dist status URL`: where a tablebase stands, finished or in progress.

Reads only small files: `manifest.json` (the published layers and their
counts), `.bestemshe/solve.json` (the scope of the last solve: its
`--min-captured`), the round markers of the pairs in progress
(`.bestemshe/pairs/<pair>/round-*/complete.json`), the run log
(`.bestemshe/runs.jsonl`) and the lease. Never a layer
file, never a Dask cluster.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..data.lease import stale_reason
from ..data.store import Store, completed_rounds, find_tablebase, read_json
from ..errors import StoreError
from ..game.dag import make_plan
from ..game.variant import Variant
from ..naming import LEASE, PAIRS, SOLVE_RECORD, counted, layer_name, parse_pair_dir
from .runlog import close_lost, format_runs, read_runs, summarise

SYMBOLS = {"done": "#", "running": "R", "pending": ".", None: " "}


def _pair_dirs(store: Store) -> list[tuple[str, tuple[int, int]]]:
    """(folder name, (a, b)) of each pair with checkpoints."""
    if not store.exists(PAIRS):
        return []
    parsed = ((n, parse_pair_dir(n)) for n in store.list_names(f"{PAIRS}/pair-*"))
    return sorted((n, pair) for n, pair in parsed if pair is not None)


def tablebase_status(
    url: str, storage_options: dict[str, Any] | None = None, now: float | None = None
) -> dict[str, Any]:
    store = Store(url, storage_options)
    manifest = find_tablebase(store, allow_synthetic=True)
    if manifest is None:
        raise StoreError(
            f"{store.shown} holds layer files but no manifest.json, so no solve of this tool "
            "wrote there; `bestemshe-dist verify` checks such a tablebase."
        )
    variant = Variant(**manifest["variant"])
    record = read_json(store, SOLVE_RECORD) if store.exists(SOLVE_RECORD) else None
    min_captured = record.get("min_captured", 0) if record else 0
    # Every layer's k1 + k2 is even: a record an older solve wrote with an odd M
    # (accepted then) solved the layers of M + 1, which is what to report.
    min_captured += min_captured % 2
    scope = {layer_name(*l) for l in make_plan(variant, min_captured).layers}
    published = manifest["layers"]

    in_progress: list[dict[str, Any]] = []
    for key, (a, b) in _pair_dirs(store):
        markers = completed_rounds(store, key)
        pair_layers = [layer_name(a, b)] + ([layer_name(b, a)] if a != b else [])
        if all(l in published for l in pair_layers):
            continue  # published; its checkpoints are only left over
        last = markers[-1] if markers else None
        in_progress.append(
            {
                "pair": key,
                "layers": pair_layers,
                "rounds_done": len(markers),
                "decided": sum(m["decided"] for m in markers),
                "last_round": None
                if last is None
                else {
                    "round": last["round"],
                    "mode": last.get("mode"),
                    "decided": last["decided"],
                    "seconds": last.get("seconds"),
                },
            }
        )
    running = {l for p in in_progress for l in p["layers"]}

    layers: list[dict[str, Any]] = []
    for k1, k2 in variant.layers:
        name = layer_name(k1, k2)
        entry = published.get(name)
        if entry is not None:
            state = "done"
        elif name in running:
            state = "running"
        elif name in scope:
            state = "pending"
        else:
            continue  # outside the solve's scope: not shown
        row: dict[str, Any] = {
            "layer": name,
            "k1": k1,
            "k2": k2,
            "state": state,
            "positions": variant.layer_size(k1, k2),
        }
        if entry is not None:
            row.update(
                counts=dict(entry["counts"]), rounds=entry.get("rounds"), seconds=entry.get("solve_seconds")
            )
        layers.append(row)

    done = [r for r in layers if r["state"] == "done"]
    counts = {k: sum(r["counts"][k] for r in done) for k in ("win", "draw", "loss")}
    lease: dict[str, Any] | None = None
    if store.exists(LEASE):
        try:
            holder = json.loads(store.read_bytes(LEASE))
            stale = stale_reason(holder, now)
            lease = {
                "host": holder.get("host"),
                "pid": holder.get("pid"),
                "held": stale is None,
                "stale_reason": stale,
                "renewed_seconds_ago": round((now or time.time()) - float(holder.get("renewed", 0)), 1),
            }
        except (ValueError, TypeError, AttributeError):
            lease = {
                "host": None,
                "pid": None,
                "held": False,
                "stale_reason": "its record is unreadable",
                "renewed_seconds_ago": None,
            }
    runs = read_runs(store)
    if not (lease and lease["held"]):
        close_lost(runs)  # an open line with no live solve behind it was killed outright
    return {
        "url": store.shown,
        "variant": variant.as_dict(),
        "min_captured": min_captured,
        "kazans": list(variant.kazans),
        "layers": layers,
        "layers_done": len(done),
        "layers_total": len(layers),
        "positions_done": sum(r["positions"] for r in done),
        "positions_total": sum(r["positions"] for r in layers),
        "counts": counts,
        "solve_seconds": sum(r.get("seconds") or 0.0 for r in done),
        "pairs_in_progress": in_progress,
        "lease": lease,
        "runs": runs,
        "runs_summary": summarise(runs),
        "finished": all(r["state"] == "done" for r in layers) and not in_progress,
    }


def _share(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def format_status(status: dict[str, Any]) -> str:
    v = status["variant"]
    rows = {r["layer"]: r for r in status["layers"]}
    shown = [(r["k1"], r["k2"]) for r in status["layers"]]
    kazans = [k for k in status["kazans"] if any(k in layer for layer in shown)]
    rows_k1 = [k for k in kazans if any(k == k1 for k1, _ in shown)]
    kazans = [k for k in kazans if any(k == k2 for _, k2 in shown)]
    lines = [
        f"{status['url']}: {v['stones']} stones, {v['pits']} pits per side, "
        f"layers with k1 + k2 >= {status['min_captured']}",
        "",
        "layers (rows k1, columns k2): # done, R in progress (checkpointed rounds), . pending",
        "   k1\\k2 " + "".join(f"{k2:>3}" for k2 in kazans),
    ]
    for k1 in rows_k1:
        cells = "".join(
            f"{SYMBOLS[rows[layer_name(k1, k2)]['state'] if layer_name(k1, k2) in rows else None]:>3}"
            for k2 in kazans
        )
        lines.append(f"   {k1:>5} {cells}")
    lines.append("")
    lines.append("win share of the side to move, per done layer (%):")
    lines.append("   k1\\k2 " + "".join(f"{k2:>4}" for k2 in kazans))
    for k1 in rows_k1:
        shares = []
        for k2 in kazans:
            r = rows.get(layer_name(k1, k2))
            if r is None or r["state"] != "done":
                shares.append(f"{'':>4}" if r is None else f"{'.':>4}")
            else:
                n = sum(r["counts"].values())
                shares.append(f"{round(100 * r['counts']['win'] / n) if n else 0:>4}")
        lines.append(f"   {k1:>5} " + "".join(shares))
    lines.append("")
    c = status["counts"]
    n = sum(c.values())
    lines.append(
        f"layers done: {status['layers_done']} of {status['layers_total']}"
        + (" (finished)" if status["finished"] else "")
    )
    lines.append(f"positions: {status['positions_done']:,} of {status['positions_total']:,} published")
    lines.append(
        f"win {c['win']:,} ({_share(c['win'], n)}), draw {c['draw']:,} ({_share(c['draw'], n)}), "
        f"loss {c['loss']:,} ({_share(c['loss'], n)}); solve time {status['solve_seconds']:.1f}s"
    )
    if status["pairs_in_progress"]:
        for p in status["pairs_in_progress"]:
            last = p["last_round"]
            if last is None:
                lines.append(
                    f"in progress: {p['pair']} (layers {' '.join(p['layers'])}), no round checkpointed yet"
                )
            else:
                lines.append(
                    f"in progress: {p['pair']} (layers {' '.join(p['layers'])}), "
                    f"{counted(p['rounds_done'], 'round')} checkpointed; last round {last['round']} "
                    f"({last['mode']}): {last['decided']:,} decided; "
                    f"{p['decided']:,} decided in all"
                )
    else:
        lines.append("in progress: no pair")
    lines += format_runs(status["runs"])
    lease = status["lease"]
    if lease and lease["held"]:
        lines.append(
            f"a solve holds the lease: host {lease['host']}, pid {lease['pid']}, "
            f"renewed {lease['renewed_seconds_ago']}s ago"
        )
    elif lease:
        lines.append(
            f"no solve is running: the lease left by pid {lease['pid']} on host {lease['host']} is "
            f"stale, as {lease['stale_reason']}; the next solve takes it over"
        )
    return "\n".join(lines)
