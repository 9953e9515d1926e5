"""What a solved game says, computed from its tablebase folder and nothing else.

`game_facts(tb, ...)` gathers, for the `results` command:

- the starting position's value and distance, and the value of every position
  after the first move (the oracle's probe and moves);
- the share of wins, draws and losses over the whole game and per layer, the
  longest win (position and plies) in the game and per kazan total, and the
  distance histograms (the oracle's per-layer statistics, `stats`);
- a perfect game from the start to its end (`mainline`);
- the verifier's report, as `verify` saved it beside the tablebase;
- the solve's own figures: every run from the run log (`status`), wall time,
  core-seconds, positions per core-second, the most memory used, and per pair
  its rounds and seconds (the manifest).

Every value is for the side to move of the position it belongs to.
"""

from __future__ import annotations

import json
from typing import Any

from ..data.store import Store
from ..errors import StoreError
from ..game.position import Position
from ..naming import VERIFY_REPORT, layer_name
from ..oracle.report import mainline_report
from ..oracle.tablebase import DRAW, FLIP, LOSS, WIN, Tablebase
from ..watch.runlog import close_lost, read_runs, summarise


def saved_report(store: Store) -> dict[str, Any] | None:
    """The report of the last full verify of this tablebase (verify saves it), or None."""
    try:
        if not store.exists(VERIFY_REPORT):
            return None
        report: dict[str, Any] = json.loads(store.read_bytes(VERIFY_REPORT))
    except (StoreError, ValueError):
        return None
    return report


def verify_facts(report: dict[str, Any] | None, layers: int, positions: int) -> dict[str, Any]:
    """What the verifier found, and whether it covered the whole tablebase."""
    if report is None:
        return {"ran": False, "passed": False, "with_distances": False, "positions_checked": 0}
    whole = report.get("layers_checked") == layers and report.get("positions_checked") == positions
    return {
        "ran": True,
        "passed": bool(report.get("passed")) and whole,
        "with_distances": bool(report.get("distances")),
        "proof": bool(report.get("proof")) and whole,
        "whole": whole,
        "positions_checked": int(report.get("positions_checked", 0)),
        "layers_checked": int(report.get("layers_checked", 0)),
        "failures": int(report.get("failures", 0)),
        "seconds": report.get("seconds"),
        "cpu_seconds": report.get("cpu_seconds"),
        "positions_per_core_second": report.get("positions_per_core_second"),
        "layers_from_earlier_runs": report.get("layers_from_earlier_runs", 0),
        "summary": report.get("summary"),
    }


def _histogram_sum(into: list[int], add: list[int]) -> list[int]:
    if len(add) > len(into):
        into = into + [0] * (len(add) - len(into))
    return [a + (add[i] if i < len(add) else 0) for i, a in enumerate(into)]


def distance_facts(per_layer: list[dict[str, Any]]) -> dict[str, Any]:
    """Histograms of distances (plies to the next capture or the end) of wins and
    of losses, over the game and per kazan total; the longest win and loss of
    each total with an example position."""
    game: dict[str, list[int]] = {WIN: [], LOSS: []}
    totals: dict[int, dict[str, Any]] = {}
    for s in per_layer:
        dist = s.get("distances")
        if not dist:
            continue
        total = totals.setdefault(s["k1"] + s["k2"], {WIN: [], LOSS: [], "longest": {WIN: None, LOSS: None}})
        for value in (WIN, LOSS):
            game[value] = _histogram_sum(game[value], dist[value]["histogram"])
            total[value] = _histogram_sum(total[value], dist[value]["histogram"])
            if dist[value]["longest"] is not None:
                best = total["longest"][value]
                if best is None or dist[value]["longest"] > best["plies"]:
                    total["longest"][value] = {
                        "plies": dist[value]["longest"],
                        "position": dist[value]["example"],
                        "layer": s["layer"],
                    }
    return {
        "histogram": game,
        "per_total": {
            str(k): {
                "histogram": {WIN: t[WIN], LOSS: t[LOSS]},
                "longest_win": t["longest"][WIN],
                "longest_loss": t["longest"][LOSS],
            }
            for k, t in sorted(totals.items(), reverse=True)
        },
    }


def start_facts(tb: Tablebase) -> dict[str, Any]:
    """The starting position's value and distance, and every first move: the
    position after it and that position's value for its side to move."""
    start = Position.start(tb.variant)
    analysis = tb.analyse(start)
    moves = []
    for m in analysis.moves:
        moves.append(
            {
                "pit": m.pit + 1,
                "stones": m.stones,
                "captured": m.captured,
                "ends_game": m.ends_game,
                "position": None if m.child is None else str(m.child),
                "value": None if m.child is None else FLIP[m.value],  # for the side then to move
                "dtz": m.child_dtz,
                "value_for_first_player": m.value,
            }
        )
    return {
        "position": str(start),
        "value": analysis.probe.value,
        "dtz": analysis.probe.dtz,
        "moves": moves,
    }


def mainline_facts(tb: Tablebase, max_plies: int) -> dict[str, Any]:
    """A perfect game from the start: every ply with the kazans after it (seen from
    the first player: kazans of the player who moved first, then of the other)
    and the distance of the position it leads to."""
    line = mainline_report(tb.mainline(Position.start(tb.variant), max_plies=max_plies))
    for m in line["moves"]:
        # The position before ply p is written from its mover: the first player
        # moves at odd plies.
        before = Position.parse(m["position"], tb.variant)
        first_moves = m["ply"] % 2 == 1
        if m["child"] is not None:
            after = Position.parse(m["child"], tb.variant)
            mover, other = after.k2, after.k1  # the child is written from the opponent's side
        else:  # the move ends the game: its stones go to the mover
            mover, other = before.k1 + m["captured"], before.k2
        m["kazans"] = [mover, other] if first_moves else [other, mover]
    return line


def solve_facts(manifest: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The solve's own figures: its runs, wall time, core-seconds, rate, memory,
    and per pair its positions, rounds and seconds."""
    close_lost(runs)
    summary = summarise(runs)
    core_seconds = sum(float(r.get("seconds") or 0.0) * int(r.get("threads") or 0) for r in runs)
    positions = sum(int(e["positions"]) for e in manifest["layers"].values())
    pairs: dict[str, dict[str, Any]] = {}
    for entry in manifest["layers"].values():
        p = pairs.setdefault(
            entry.get("pair", layer_name(entry["k1"], entry["k2"])),
            {"positions": 0, "layers": [], "rounds": entry.get("rounds"), "method": entry.get("method")},
        )
        p["positions"] += int(entry["positions"])
        p["layers"].append(layer_name(entry["k1"], entry["k2"]))
        p["seconds"] = entry.get("solve_seconds")  # the pair's rounds, the same in both its entries
        p["publish_seconds"] = round(
            p.get("publish_seconds", 0.0) + float(entry.get("publish_seconds") or 0.0), 3
        )
        p["evaluations"] = entry.get("evaluations")
        p["unmoves"] = entry.get("unmoves")
    return {
        "runs": len(runs),
        "wall_seconds": summary["seconds"],
        "core_seconds": round(core_seconds, 1),
        "positions": positions,
        "positions_per_core_second": round(positions / core_seconds) if core_seconds else None,
        "peak_machine_used_bytes": summary["peak_machine_used_bytes"],
        "peak_host_arrays_bytes": summary["peak_host_arrays_bytes"],
        "pairs": dict(sorted(pairs.items(), key=lambda kv: -kv[1]["positions"])),
    }


def check_whole(tb: Tablebase) -> list[tuple[int, int]]:
    """The layers of a whole game solved by this tool, else one sentence saying what is missing."""
    if tb.manifest is None:
        raise StoreError(f"{tb.url} has no manifest.json: results need a tablebase this tool solved.")
    layers = sorted(tb.layers() or ())
    missing = [l for l in tb.variant.layers if l not in set(layers)]
    if missing:
        raise StoreError(
            f"{tb.url} holds {len(layers)} of the {len(tb.variant.layers)} layers of the "
            f"{tb.variant.describe()} game (layer {layer_name(*missing[0])} is missing): results "
            "describe a whole game; solve it first."
        )
    return layers


def game_facts(tb: Tablebase, stats: dict[str, Any], max_plies: int = 2000) -> dict[str, Any]:
    """Every fact of the results card (module doc), as plain JSON data; `stats`:
    tb.stats() of the whole game (check_whole)."""
    assert tb.manifest is not None  # check_whole says so
    total = stats["total"]
    per_layer = {
        s["layer"]: {
            "k1": s["k1"],
            "k2": s["k2"],
            "positions": s["positions"],
            WIN: s[WIN],
            DRAW: s[DRAW],
            LOSS: s[LOSS],
            "longest_win": (s["distances"] or {}).get(WIN, {}).get("longest"),
            "longest_loss": (s["distances"] or {}).get(LOSS, {}).get("longest"),
        }
        for s in stats["layers"]
    }
    distances = distance_facts(stats["layers"])
    runs = read_runs(tb.store)
    positions = int(total["positions"])
    return {
        "variant": tb.variant.as_dict(),
        "start": start_facts(tb),
        "counts": {
            "positions": positions,
            WIN: int(total[WIN]),
            DRAW: int(total[DRAW]),
            LOSS: int(total[LOSS]),
            "per_layer": per_layer,
        },
        "longest_win": None
        if total["longest"][WIN] is None
        else {"plies": total["longest"][WIN]["distance"], "position": total["longest"][WIN]["example"]},
        "longest_loss": None
        if total["longest"][LOSS] is None
        else {"plies": total["longest"][LOSS]["distance"], "position": total["longest"][LOSS]["example"]},
        "distances": distances,
        "mainline": mainline_facts(tb, max_plies),
        "verify": verify_facts(saved_report(tb.store), len(stats["layers"]), positions),
        "solve": solve_facts(tb.manifest, runs),
        "runs": runs,
    }
