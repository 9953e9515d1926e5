"""The results card: README.md of a solved game, written from its facts (facts.py).

Each section names the command that recomputes what it shows from the tablebase
folder, so every figure can be checked by anyone holding the files.
"""

from __future__ import annotations

from typing import Any

from ..naming import counted
from ..oracle.tablebase import plies
from ..watch.runlog import hms, utc

VALUE_WORDS = {"win": "a win", "draw": "a draw", "loss": "a loss"}


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f}%" if whole else "-"


def _gib(n: int | None) -> str:
    return "-" if not n else f"{n / 2**30:.2f} GiB"


def _plies(n: int | None) -> str:
    return "-" if n is None else plies(int(n))


def _value(value: str | None, dtz: int | None) -> str:
    if value is None:
        return "-"
    return VALUE_WORDS[value] + (f" in {_plies(dtz)}" if dtz is not None and value != "draw" else "")


def _longest(found: dict[str, Any] | None) -> str:
    """Two cells: the plies and the position of a longest win or loss."""
    return "- | -" if not found else f"{found['plies']} | `{found['position']}`"


def _histogram_table(hist: dict[str, list[int]]) -> list[str]:
    top = max(len(hist["win"]), len(hist["loss"]))
    lines = ["| plies | wins | losses |", "|---:|---:|---:|"]
    for d in range(top):
        w = hist["win"][d] if d < len(hist["win"]) else 0
        l = hist["loss"][d] if d < len(hist["loss"]) else 0
        if w or l:
            lines.append(f"| {d} | {w:,} | {l:,} |")
    return lines


def render(facts: dict[str, Any], url: str, pictures: list[str]) -> str:
    """The card's Markdown. `url`: how the card names the tablebase folder in its commands."""
    v = facts["variant"]
    game = f"{v['stones']}-stone game with {v['pits']} pits per side"
    start, counts, verify, solve = facts["start"], facts["counts"], facts["verify"], facts["solve"]
    n = counts["positions"]
    out: list[str] = [
        f"# Bestemshe, {v['stones']} stones: the whole game solved",
        "",
        f"Every one of the {n:,} positions of the {game} ({len(counts['per_layer'])} layers), "
        "solved by retrograde analysis with `bestemshe-dist`, with the distance of every "
        "won and lost position to its next capture or the end of the game. Values are for "
        "the side to move. Everything below was computed from the tablebase folder by "
        "`bestemshe-dist results DIR`; each section names the command that recomputes it.",
        "",
        "## The starting position",
        "",
        f"`{start['position']}` (kazans of the side to move and of the other, then the pits of "
        f"the side to move and of the other) is **{_value(start['value'], start['dtz'])}** "
        "for the first player.",
        "",
        "The position after each first move, with its value for the second player, who moves next:",
        "",
        "| pit | captures | position after it | value for the second player |",
        "|---:|---:|---|---|",
    ]
    for m in start["moves"]:
        after = "the game ends" if m["position"] is None else f"`{m['position']}`"
        out.append(f"| {m['pit']} | {m['captured']} | {after} | {_value(m['value'], m['dtz'])} |")
    out += [
        "",
        f"Recompute: `bestemshe-dist probe {url} {start['position']}`.",
        "",
        "## Wins, draws and losses",
        "",
        f"Over the whole game: {counts['win']:,} wins ({_pct(counts['win'], n)}), "
        f"{counts['draw']:,} draws ({_pct(counts['draw'], n)}), "
        f"{counts['loss']:,} losses ({_pct(counts['loss'], n)}).",
        "",
    ]
    if "win-share.png" in pictures:
        out += ["![the share of wins per layer](win-share.png)", ""]
    out += [
        "| layer | positions | win | draw | loss | longest win | longest loss |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, c in sorted(counts["per_layer"].items(), key=lambda kv: (kv[1]["k1"] + kv[1]["k2"], kv[0])):
        p = c["positions"]
        out.append(
            f"| {name} | {p:,} | {_pct(c['win'], p)} | {_pct(c['draw'], p)} | {_pct(c['loss'], p)} | "
            f"{c['longest_win'] if c['longest_win'] is not None else '-'} | "
            f"{c['longest_loss'] if c['longest_loss'] is not None else '-'} |"
        )
    out += ["", f"Recompute: `bestemshe-dist stats {url}` (or `status {url}`).", ""]
    out += ["## The longest wins", ""]
    longest = facts["longest_win"]
    if longest:
        out += [
            f"The longest win in the game: **{_plies(longest['plies'])}** to the next capture or "
            f"the end, from `{longest['position']}`.",
            "",
        ]
    out += [
        "| kazans captured (k1 + k2) | longest win | from | longest loss | from |",
        "|---:|---:|---|---:|---|",
    ]
    for total, t in facts["distances"]["per_total"].items():
        w, l = t["longest_win"], t["longest_loss"]
        out.append(f"| {total} | {_longest(w)} | {_longest(l)} |")
    out += ["", f"Recompute: `bestemshe-dist stats {url} --json`, then `probe` any position above.", ""]
    out += ["## Distances", ""]
    if "distances.png" in pictures:
        out += ["![distances of wins and losses](distances.png)", ""]
    out += _histogram_table(facts["distances"]["histogram"])
    out += ["", f"Recompute: `bestemshe-dist stats {url} --json` (per layer; summed here).", ""]

    line = facts["mainline"]
    out += [
        "## A perfect game",
        "",
        f"Both sides playing perfectly from the start ({line['result']} after {_plies(line['plies'])}): "
        "the winner takes the shortest win, the loser the longest loss. Kazans are the first "
        "player's, then the second's, after the move; the distance is that of the position the "
        "move leads to, for its side to move.",
        "",
        "| ply | player | pit | captures | kazans after | distance after | position after |",
        "|---:|---|---:|---:|---|---|---|",
    ]
    for m in line["moves"]:
        who = "first" if m["ply"] % 2 == 1 else "second"
        after = m["after"]
        dist = "game over" if after is None else _value(after["category"], after["dtz"])
        child = "-" if m["child"] is None else f"`{m['child']}`"
        out.append(
            f"| {m['ply']} | {who} | {m['pit']} | {m['captured'] or ''} | "
            f"{m['kazans'][0]}–{m['kazans'][1]} | {dist} | {child} |"
        )
    out += ["", f"Recompute: `bestemshe-dist mainline {url} {start['position']}`.", ""]

    out += ["## The proof", ""]
    if not verify["ran"]:
        out += ["The tablebase has not been verified yet: run `bestemshe-dist verify DIR`.", ""]
    else:
        out += [
            f"`bestemshe-dist verify` checked {verify['positions_checked']:,} positions in "
            f"{counted(verify['layers_checked'], 'layer')}"
            + (" with their distances" if verify["with_distances"] else "")
            + f": **{'passed' if verify['passed'] else 'not passed'}**"
            + (", a proof given the rules" if verify.get("proof") else "")
            + (
                ""
                if verify.get("whole")
                else " (it did not cover every position of the game: not a proof of it)"
            )
            + ".",
            "",
            f"> {verify['summary']}",
            "",
            f"Recompute: `bestemshe-dist verify {url}` (`--fresh` to check every layer again).",
            "",
        ]

    out += [
        "## The solve",
        "",
        f"{counted(solve['runs'], 'run')}, {hms(solve['wall_seconds'])} of wall time in all, "
        f"{solve['core_seconds']:,.0f} core-seconds, "
        + (
            f"{solve['positions_per_core_second']:,} positions per core-second"
            if solve["positions_per_core_second"]
            else "positions per core-second unknown"
        )
        + f"; the most memory in use on the machine: {_gib(solve['peak_machine_used_bytes'])} "
        f"(shared arrays of a host at most {_gib(solve['peak_host_arrays_bytes'])}).",
        "",
        "| run | started | ended | wall time | how it ended | threads | layers done | rounds done | memory used at most |",
        "|---:|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in facts["runs"]:
        how = r.get("how", "-") + (f" ({r['reason']})" if r.get("reason") else "")
        out.append(
            f"| {r.get('run')} | {utc(r.get('started'))} UTC | {utc(r.get('ended'))} UTC | "
            f"{hms(float(r.get('seconds') or 0))} | {how} | {r.get('threads', '-')} | {r.get('layers_done', 0)} | "
            f"{r.get('rounds_done', 0)} | {_gib(r.get('peak', {}).get('machine_used_bytes'))} |"
        )
    out += ["", f"Recompute: `bestemshe-dist status {url}` (the run log `.bestemshe/runs.jsonl`).", ""]
    if "pair-seconds.png" in pictures:
        out += ["![time per pair against its positions](pair-seconds.png)", ""]
    out += [
        "| pair | positions | method | rounds | seconds of rounds | seconds of publication |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for key, p in solve["pairs"].items():
        out.append(
            f"| {key} | {p['positions']:,} | {p.get('method') or '-'} | {p.get('rounds') or '-'} | "
            f"{p.get('seconds') or 0:,.1f} | {p.get('publish_seconds') or 0:,.1f} |"
        )
    out += [
        "",
        f"Recompute: the manifest's entries (`manifest.json` here, as the solve wrote it in `{url}`).",
        "",
        "## Files",
        "",
        "`manifest.json` is the solve's manifest: every layer's files with their bytes and sha256, "
        "counts, rounds, evaluations and seconds. `SHA256SUMS` lists every file "
        "(`sha256sum -c SHA256SUMS` in the tablebase folder checks them). `facts.json` holds "
        "everything on this page for programs.",
        "",
    ]
    return "\n".join(out)
