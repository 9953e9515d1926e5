"""`bestemshe-dist match`: a policy against the perfect player, scored move by move.

The protocol of the published tablebase's authors: symmetric starts (equal
kazans, equal stones on each side), each played twice with the colours swapped;
the policy moves, the oracle answers with its best move (which keeps the value);
a game stopped at the ply limit is a draw. Scored: the share of the policy's
moves that keep the game-theoretic value, the moves that lose value (a win to a
draw or loss, a draw to a loss), and the games that ended below the result the
policy's side had at the start (of those it started won or drawn).

Policies (`--policy`):
  random          a legal pit, uniformly
  greedy          the move that wins at once, else the largest capture (ties at random)
  minimax:D       negamax D plies deep on the kazan difference (a game won at once counts most)
  oracle          the tablebase's own best move (scores 100%: a check of the harness)
  module:function a Python callable: given an int64 array (N, 2 + 2 pits) of positions
                  written from the side to move (`k1 k2 p0 ..`), it returns N pits as
                  0-based indexes into the mover's row. A PyTorch or scikit-learn model
                  plugs in through it without this project depending on either.

Games run in lockstep within a task, so a model sees all its positions of a
step as one batch; tasks (a chunk of starts each) run on Dask. The random
choices come from generators seeded (seed, chunk): the same seed, the same games.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from ..errors import BestemsheError, UsageError
from ..game import rules
from ..game.position import Position, random_symmetric, symmetric_halves
from ..game.rules import MOVE_ON, MOVE_WIN
from ..game.variant import Variant
from ..naming import layer_name
from ..oracle.tablebase import FLIP, NUMBER_OF, Move, Tablebase

DEFAULT_PLIES = 400
CHUNK_STARTS = 25
WIN_SCORE = 10_000

# Positions as a policy sees them: (N, 2 + 2 pits), written from the side to move.
Rows: TypeAlias = npt.NDArray[np.int64]
# f(rows, rng, variant, tablebase) -> a pit a row, as anything checked_pits takes.
Policy: TypeAlias = Callable[[Rows, np.random.Generator, Variant, Tablebase], Any]
# What --policy names, or (in this process) a callable given the rows alone.
PolicySpec: TypeAlias = str | Callable[[Rows], Any]
# (pit, outcome, captured, child row or None) of a legal move
_LegalMove: TypeAlias = tuple[int, int, int, Rows | None]


class PolicyError(BestemsheError):
    """A policy that fails or answers an illegal pit: one sentence, exit 1."""


# -- policies ---------------------------------------------------------------------------
def _legal(rows: Rows, pits: int) -> npt.NDArray[np.bool_]:
    return rows[:, 2 : 2 + pits] > 0


def random_policy(
    rows: Rows, rng: np.random.Generator, variant: Variant, tb: Tablebase
) -> npt.NDArray[np.intp]:
    """`random`: a legal pit of each row, uniformly, drawn from `rng`."""
    legal = _legal(rows, variant.pits)
    pick = rng.random(legal.shape) * legal
    return pick.argmax(axis=1)


def _moves(variant: Variant, row: Rows) -> list[_LegalMove]:
    """(pit, outcome, captured, child row or None) of each legal move of `row`
    (rules.play's move, the child as a row from the opponent's side)."""
    out: list[_LegalMove] = []
    for pit in range(variant.pits):
        moved = rules.play(variant, int(row[0]), int(row[1]), row[2:], pit)
        if moved is None:
            continue
        if len(moved) == 2:  # ("win", captured); else ("child", (k1, k2, board), captured)
            out.append((pit, MOVE_WIN, moved[1], None))
        else:
            (k1, k2, board), captured = moved[1], moved[2]
            out.append((pit, MOVE_ON, captured, np.concatenate([[k1, k2], board])))
    return out


def greedy_policy(rows: Rows, rng: np.random.Generator, variant: Variant, tb: Tablebase) -> Rows:
    """`greedy`: the move that wins at once, else the largest capture; ties at random."""
    picks = np.empty(rows.shape[0], np.int64)
    for i, row in enumerate(rows):
        scored = [
            (WIN_SCORE if outcome == MOVE_WIN else captured, pit)
            for pit, outcome, captured, _ in _moves(variant, row)
        ]
        best = max(s for s, _ in scored)
        ties = [pit for s, pit in scored if s == best]
        picks[i] = ties[int(rng.integers(len(ties)))]
    return picks


def _negamax(variant: Variant, row: Rows, depth: int) -> int:
    """The kazan difference for the side to move after `depth` plies of best play."""
    moves = _moves(variant, row)
    if not moves:
        return -WIN_SCORE  # no stone to sow: lost
    if depth == 0:
        return int(row[0]) - int(row[1])
    best = -WIN_SCORE - 1
    for _pit, _outcome, _captured, child in moves:
        # no child row: the move wins at once (MOVE_WIN)
        score = WIN_SCORE if child is None else -_negamax(variant, child, depth - 1)
        best = max(best, score)
    return best


def minimax_policy(depth: int) -> Policy:
    """`minimax:D`: the policy that plays negamax `depth` plies deep on the kazan
    difference (a game won at once counts most); ties at random."""

    def policy(rows: Rows, rng: np.random.Generator, variant: Variant, tb: Tablebase) -> Rows:
        picks = np.empty(rows.shape[0], np.int64)
        for i, row in enumerate(rows):
            scored = [
                # no child row: the move wins at once (MOVE_WIN)
                (WIN_SCORE if child is None else -_negamax(variant, child, depth - 1), pit)
                for pit, _outcome, _captured, child in _moves(variant, row)
            ]
            best = max(s for s, _ in scored)
            ties = [pit for s, pit in scored if s == best]
            picks[i] = ties[int(rng.integers(len(ties)))]
        return picks

    return policy


def oracle_policy(rows: Rows, rng: np.random.Generator, variant: Variant, tb: Tablebase) -> Rows:
    """`oracle`: the tablebase's own best move (a check of the harness: it keeps
    the value at every move)."""
    return np.array([_best_pit(tb, row) for row in rows], np.int64)


def _best_pit(tb: Tablebase, row: Rows) -> int:
    choice = tb.best_move(tb.position([int(x) for x in row]))
    assert choice is not None  # a policy is asked only of positions with a move (play_chunk)
    return choice.pit


def policy_name(spec: PolicySpec) -> str:
    return spec if isinstance(spec, str) else getattr(spec, "__qualname__", repr(spec))


def load_policy(spec: PolicySpec) -> Policy:
    """The policy `spec` names (or a callable taking a batch of rows, as
    module:function's), as f(rows, rng, variant, tablebase) -> pits; a name that
    is none is one sentence (UsageError), before any game starts."""
    if callable(spec):
        return lambda rows, rng, variant, tb: spec(rows.copy())
    if spec == "random":
        return random_policy
    if spec == "greedy":
        return greedy_policy
    if spec == "oracle":
        return oracle_policy
    if spec.startswith("minimax:"):
        try:
            depth = int(spec.split(":", 1)[1])
        except ValueError:
            depth = 0
        if not 1 <= depth <= 8:
            raise UsageError(
                f"--policy minimax:D takes a depth D from 1 to 8, not {spec.split(':', 1)[1]!r}."
            )
        return minimax_policy(depth)
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise UsageError(
            f"--policy must be random, greedy, minimax:D, oracle or module:function, not {spec!r}."
        )
    try:
        found = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise UsageError(f"--policy {spec}: cannot import {module} ({exc}).") from None
    except AttributeError:
        raise UsageError(f"--policy {spec}: {module} has no {name}.") from None
    if not callable(found):
        raise UsageError(f"--policy {spec}: {module}.{name} is not callable.")

    def external(rows: Rows, rng: np.random.Generator, variant: Variant, tb: Tablebase) -> Any:
        return found(rows.copy())

    return external


def checked_pits(spec: PolicySpec, got: object, rows: Rows, variant: Variant) -> Rows:
    """The policy's answer as pits, or one sentence naming the first bad one."""
    spec = policy_name(spec)
    pits: npt.NDArray[Any] | None
    try:
        pits = np.asarray(got)
    except Exception:
        pits = None
    if pits is None or pits.shape != (rows.shape[0],) or not np.issubdtype(pits.dtype, np.integer):
        shape = getattr(pits, "shape", None)
        raise PolicyError(
            f"policy {spec} must return {rows.shape[0]} whole numbers (pits 0..{variant.pits - 1}) "
            f"for {rows.shape[0]} positions, not {type(got).__name__} of shape {shape}."
        )
    pits = pits.astype(np.int64)
    for i, pit in enumerate(pits.tolist()):
        if not 0 <= pit < variant.pits or rows[i, 2 + pit] == 0:
            where = " ".join(str(int(x)) for x in rows[i])
            what = "out of range" if not 0 <= pit < variant.pits else "empty"
            raise PolicyError(
                f"policy {spec} chose pit index {pit} for position {where}, which is {what}: an illegal move."
            )
    return pits


# -- starts -------------------------------------------------------------------------------
def symmetric_starts(
    variant: Variant, held: Iterable[tuple[int, int]], count: int, seed: int
) -> list[Position]:
    """`count` symmetric positions (equal kazans, equal stones a side, a move to make)
    of the held layers, uniform over all such positions."""
    layers = sorted(l for l in held if symmetric_halves(variant, l))
    if not layers:
        raise UsageError(
            "the tablebase holds no layer with equal kazans and an even number of stones on the "
            "board: no symmetric start."
        )
    ways = np.array([symmetric_halves(variant, l) for l in layers], np.float64) ** 2
    rng = np.random.default_rng([seed, 0x57A27])
    picks = rng.choice(len(layers), size=count, p=ways / ways.sum())
    return [random_symmetric(variant, layers[j], rng) for j in picks.tolist()]


# -- games --------------------------------------------------------------------------------
def play_chunk(
    tb: Tablebase, policy_spec: PolicySpec, starts: list[Position], seed: int, chunk: int, plies: int
) -> list[dict[str, Any]]:
    """Every start played twice (the policy first, then second): one record a game."""
    variant = tb.variant
    policy = load_policy(policy_spec)
    rng = np.random.default_rng([seed, chunk])
    games: list[dict[str, Any]] = []
    for start in starts:
        start_value = tb.probe(start).value
        for policy_first in (True, False):
            games.append(
                {
                    "start": str(start),
                    "layer": layer_name(*start.layer),
                    "policy_first": policy_first,
                    "theory": start_value if policy_first else FLIP[start_value],
                    "pos": start,
                    "policy_to_move": policy_first,
                    "plies": 0,
                    "moves": 0,
                    "kept": 0,
                    "lost": 0,
                    "result": None,
                }
            )
    while True:
        live = [g for g in games if g["result"] is None]
        if not live:
            break
        for g in live:
            if g["plies"] >= plies:
                g["result"] = "draw"  # the protocol's limit: a draw
        turn = [g for g in live if g["result"] is None and g["policy_to_move"]]
        found = {id(g): tb.analyse(g["pos"]) for g in turn}
        for g in turn:
            if not found[id(g)].moves:
                g["result"] = "loss"  # the policy's side has no stone to sow
        turn = [g for g in turn if g["result"] is None]
        if turn:
            rows = np.array([[g["pos"].k1, g["pos"].k2, *g["pos"].pits] for g in turn], np.int64)
            try:
                got = policy(rows, rng, variant, tb)
            except PolicyError:
                raise
            except Exception as exc:
                raise PolicyError(
                    f"policy {policy_name(policy_spec)} failed: {type(exc).__name__}: {exc}"
                ) from None
            pits = checked_pits(policy_spec, got, rows, variant)
            for g, pit in zip(turn, pits.tolist()):
                analysis = found[id(g)]
                move = next(m for m in analysis.moves if m.pit == pit)
                g["moves"] += 1
                g["kept"] += move.value == analysis.probe.value
                g["lost"] += NUMBER_OF[move.value] < NUMBER_OF[analysis.probe.value]
                _advance(g, move, policy_won=True)
        for g in [g for g in live if g["result"] is None and not g["policy_to_move"]]:
            choice = tb.best_move(g["pos"])
            if choice is None:
                g["result"] = "win"  # the oracle has no stone to sow
                continue
            _advance(g, choice.move, policy_won=False)
    for g in games:
        del g["pos"], g["policy_to_move"]
    return games


def _advance(game: dict[str, Any], move: Move, policy_won: bool) -> None:
    game["plies"] += 1
    if move.ends_game:
        game["result"] = "win" if policy_won else "loss"
    else:
        game["pos"] = move.child
        game["policy_to_move"] = not game["policy_to_move"]


def play_chunk_task(
    url: str, options: dict[str, Any], policy_spec: str, starts: list[str], seed: int, chunk: int, plies: int
) -> list[dict[str, Any]]:
    tb = Tablebase.open(url, options)
    return play_chunk(tb, policy_spec, [tb.position(s) for s in starts], seed, chunk, plies)


def match(
    client: Any,
    tb: Tablebase,
    url: str,
    options: dict[str, Any],
    policy_spec: PolicySpec,
    *,
    starts: int,
    plies: int = DEFAULT_PLIES,
    seed: int = 0,
) -> dict[str, Any]:
    """Play the match on Dask (client) or in this process (client None); the report.
    policy_spec: a name (see the module doc) or, in this process, a callable."""
    load_policy(policy_spec)  # a bad name stops here, before a task starts
    if starts < 1:
        raise UsageError(f"--starts must be at least 1, not {starts}.")
    held = tb.layers()
    if held is None:
        raise UsageError(f"{tb.url} cannot be listed and has no manifest: match needs to know its layers.")
    chosen = symmetric_starts(tb.variant, held, starts, seed)
    chunks = [[str(p) for p in chosen[i : i + CHUNK_STARTS]] for i in range(0, len(chosen), CHUNK_STARTS)]
    begin = time.perf_counter()
    if client is None:
        games = [
            g
            for i, c in enumerate(chunks)
            for g in play_chunk(tb, policy_spec, [tb.position(s) for s in c], seed, i, plies)
        ]
    else:
        futures = [
            client.submit(play_chunk_task, url, options, policy_spec, c, seed, i, plies, pure=False)
            for i, c in enumerate(chunks)
        ]
        games = [g for chunk in client.gather(futures) for g in chunk]
    report = score(games, policy_name(policy_spec), starts=starts, plies=plies, seed=seed, source=tb.url)
    report["wall_seconds"] = round(time.perf_counter() - begin, 3)
    return report


def score(games: list[dict[str, Any]], policy_spec: str, **settings: Any) -> dict[str, Any]:
    def tally(group: list[dict[str, Any]]) -> dict[str, Any]:
        moves = sum(g["moves"] for g in group)
        kept = sum(g["kept"] for g in group)
        eligible = [g for g in group if g["theory"] in ("win", "draw")]
        below = [g for g in eligible if NUMBER_OF[g["result"]] < NUMBER_OF[g["theory"]]]
        return {
            "games": len(group),
            "policy_moves": moves,
            "kept": kept,
            "kept_rate": None if moves == 0 else kept / moves,
            "value_losing": sum(g["lost"] for g in group),
            "games_won_or_drawn_at_start": len(eligible),
            "games_below_theory": len(below),
            "results": {r: sum(g["result"] == r for g in group) for r in ("win", "draw", "loss")},
            "policy_moves_per_game": moves / len(group) if group else 0.0,
        }

    layers = sorted({g["layer"] for g in games}, key=lambda n: tuple(map(int, n.split("_"))))
    return {
        "policy": policy_spec,
        **settings,
        **tally(games),
        "by_layer": [{"layer": name, **tally([g for g in games if g["layer"] == name])} for name in layers],
    }


def format_match(report: dict[str, Any]) -> str:
    def rate(r: float | None) -> str:
        return "n/a" if r is None else f"{100 * r:.2f}%"

    lines = [
        f"match: policy {report['policy']} against the oracle of {report['source']}: {report['starts']} symmetric "
        f"starts, each played twice (colours swapped), at most {report['plies']} plies, seed {report['seed']}",
        f"value-preserving moves  {rate(report['kept_rate'])}  ({report['kept']:,} of {report['policy_moves']:,})",
        f"value-losing moves      {report['value_losing']:,}",
        f"games below theory      {report['games_below_theory']} of the {report['games_won_or_drawn_at_start']} "
        "the policy started won or drawn",
        f"results for the policy  win {report['results']['win']}, draw {report['results']['draw']}, "
        f"loss {report['results']['loss']} ({report['games']} games)",
        f"policy moves per game   {report['policy_moves_per_game']:.1f}",
        "by start layer:",
    ]
    for row in report["by_layer"]:
        lines.append(
            f"  {row['layer']:>6}  {row['games']:>5} games  {rate(row['kept_rate']):>8} kept  "
            f"{row['value_losing']:>5} losing  {row['games_below_theory']:>4} below theory"
        )
    return "\n".join(lines)
