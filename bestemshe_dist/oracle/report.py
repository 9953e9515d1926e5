"""What `probe`, `mainline` and `stats` print: a tablebase's answers as plain JSON
data, the one schema the HTTP API answers with too (serve/app.py calls these;
docs/json.md describes it), and as text for a terminal."""

from __future__ import annotations

from typing import Any

from ..data.checksums import HASH
from ..naming import layer_name
from .tablebase import (
    LIMIT,
    LOSS,
    REPETITION,
    UNVERIFIED,
    WIN,
    Mainline,
    Move,
    PositionLike,
    Probe,
    Tablebase,
    plies,
)

# -- what `bestemshe-dist probe` prints, and GET /api/position answers --------------------
NO_MOVE = "no move: the side to move has lost"


def _move_data(m: Move) -> dict[str, Any]:
    return {
        "pit": m.pit + 1,
        "index": m.pit,
        "stones": m.stones,
        "captured": m.captured,
        "ends_game": m.ends_game,
        "child": None if m.child is None else str(m.child),
        "category": m.value,
        "dtz": m.dtz,
        "child_dtz": m.child_dtz,
    }


def report(tb: Tablebase, position: PositionLike) -> dict[str, Any]:
    """A position's category, distance, every move (best first, see
    Analysis.ordered_moves) and the best move, as plain JSON data: the one schema
    of `probe --json` and of the HTTP API's /api/position (docs/json.md). Pits are
    numbered as a person reads them, 1..pits from the mover's left (`pit`,
    `best_move`); `index` is the 0-based index into the mover's row."""
    found = tb.analyse(position)
    pos, seen = found.position, found.probe
    choice = found.best_move()
    return {
        "position": str(pos),
        "variant": tb.variant.as_dict(),
        "k1": pos.k1,
        "k2": pos.k2,
        "pits": list(pos.pits),
        "rank": pos.rank(),
        "category": seen.value,
        "dtz": seen.dtz,
        "distances": found.distances,
        "dtz_meaning": "plies to the next capture or the end of the game under best play"
        if found.distances
        else "no distance table for this layer",
        "verified": found.verified,
        "checksums": HASH if found.verified else None,
        "moves": [_move_data(m) for m in found.ordered_moves()],
        "best_move": None if choice is None else choice.pit + 1,
        "best_move_reason": choice.reason if choice else NO_MOVE,
        "conversion_guaranteed": bool(choice and choice.guaranteed),
    }


def _value_text(value: str, dtz: int | None) -> str:
    return value if dtz is None else f"{value} in {plies(dtz)}"


def format_report(data: dict[str, Any]) -> str:
    v = data["variant"]
    lines = [
        f"position  {data['position']}   (layer {layer_name(data['k1'], data['k2'])}, rank {data['rank']:,}; "
        f"{v['stones']} stones, {v['pits']} pits per side)",
        f"value     {_value_text(data['category'], data['dtz'])} for the side to move"
        + ("" if data["dtz"] is None else " (plies to the next capture or the end)")
        + ("" if data["distances"] else "  [no distance table]"),
        "moves" if data["moves"] else "moves     none: the side to move has no stone to sow and has lost",
    ]
    for m in sorted(data["moves"], key=lambda m: m["pit"]):  # the text lists them pit by pit
        what = "ends the game" if m["ends_game"] else f"-> {m['child']}"
        took = f", captures {m['captured']}" if m["captured"] else ""
        stones = f"{m['stones']} stone" + ("s" if m["stones"] != 1 else "")
        lines.append(
            f"  pit {m['pit']}  {_value_text(m['category'], m['dtz']):<16} {what}   ({stones}{took})"
        )
    if data["best_move"] is not None:
        lines.append(f"best      pit {data['best_move']}: {data['best_move_reason']}")
    lines.append(
        f"checked   every block read matched its checksum ({data['checksums']})"
        if data["verified"]
        else f"checked   {UNVERIFIED}"
    )
    return "\n".join(lines)


# -- what `bestemshe-dist mainline` prints ------------------------------------------------
def _probe_data(probe: Probe | None) -> dict[str, Any] | None:
    return None if probe is None else {"category": probe.value, "dtz": probe.dtz}


def mainline_report(line: Mainline) -> dict[str, Any]:
    """A mainline as plain JSON data, the schema of `mainline --json` and of
    /api/mainline (docs/json.md): pits numbered 1..pits as in report(), `index`
    0-based."""
    return {
        "position": str(line.start),
        "category": line.value.value,
        "dtz": line.value.dtz,
        "result": line.result,
        "plies": len(line.plies),
        "moves": [
            {
                "ply": i + 1,
                "position": str(ply.position),
                "pit": ply.move.pit + 1,
                "index": ply.move.pit,
                "captured": ply.move.captured,
                "ends_game": ply.move.ends_game,
                "child": None if ply.move.child is None else str(ply.move.child),
                "after": _probe_data(ply.after),
            }
            for i, ply in enumerate(line.plies)
        ],
    }


_RESULT_TEXT = {
    WIN: "the side to move at the start wins",
    LOSS: "the side to move at the start loses",
    REPETITION: "a position came back (perfect play repeats: a draw)",
    LIMIT: "stopped at the ply limit",
}


def format_mainline(data: dict[str, Any]) -> str:
    lines = [
        f"position  {data['position']}   {_value_text(data['category'], data['dtz'])} for the side to move"
    ]
    for m in data["moves"]:
        took = f", captures {m['captured']}" if m["captured"] else ""
        if m["ends_game"]:
            what = "ends the game"
        else:
            after = m["after"]
            what = f"-> {m['child']}   {_value_text(after['category'], after['dtz'])} for the side to move"
        lines.append(f"{m['ply']:>4}. pit {m['pit']}{took}  {what}")
    lines.append(f"result    {_RESULT_TEXT[data['result']]} after {plies(data['plies'])}")
    return "\n".join(lines)


# -- what `bestemshe-dist stats` prints ---------------------------------------------------
def _share(count: int, total: int) -> str:
    return f"{count:>15,} {100 * count / total:5.1f}%" if total else f"{count:>15,}      -"


def _longest(data: dict[str, Any] | None) -> str:
    return "-" if not data or data.get("longest") is None else str(data["longest"])


def format_stats(data: dict[str, Any]) -> str:
    v, total = data["variant"], data["total"]
    lines = [
        f"{data['tablebase']}: {len(data['layers'])} layers of the {v['stones']}-stone game "
        f"({v['pits']} pits per side)",
        f"{'layer':>7} {'positions':>15} {'win':>22} {'draw':>22} {'loss':>22}  longest win / loss (plies)",
    ]
    for s in data["layers"]:
        dist = s["distances"] or {}
        lines.append(
            f"{s['layer']:>7} {s['positions']:>15,} {_share(s['win'], s['positions'])} "
            f"{_share(s['draw'], s['positions'])} {_share(s['loss'], s['positions'])}  "
            f"{_longest(dist.get('win'))} / {_longest(dist.get('loss'))}"
        )
    lines.append(
        f"{'total':>7} {total['positions']:>15,} {_share(total['win'], total['positions'])} "
        f"{_share(total['draw'], total['positions'])} {_share(total['loss'], total['positions'])}"
    )
    for value in (WIN, LOSS):
        found = total["longest"][value]
        if found:
            lines.append(
                f"longest {value}: {plies(found['distance'])} to the next capture or the end, "
                f"e.g. {found['example']}"
            )
    return "\n".join(lines)
