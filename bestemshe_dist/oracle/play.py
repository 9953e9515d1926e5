"""`bestemshe-dist play`: a terminal game against the tablebase's perfect player.

The board is always drawn from the human's side: the oracle's row on top (its
pits numbered from its own left, so right to left for the human), the human's
row below numbered 1..pits; sowing runs left to right along the human's row and
right to left along the oracle's. After each human move the oracle says what
it did to the value (kept the win, threw away the draw, ...); `h` lists the
value of every move, `q` quits. A position seen three times with the same side
to move ends the game as a draw (nothing can change without a capture).
Input and output are streams, so tests drive it with StringIO.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Protocol, TextIO, TypeAlias

import numpy as np

from ..game import rules
from ..game.position import Position
from .tablebase import DRAW, LOSS, NUMBER_OF, UNVERIFIED, WIN, Move, Probe, Tablebase, plies

# What Game remembers to spot a repetition: the side to move, both kazans, both rows.
_Key: TypeAlias = tuple[bool, int, int, tuple[int, ...], tuple[int, ...]]


class _Say(Protocol):
    """play_game's printer: one line of text (or, with end="", a prompt) to the output stream."""

    def __call__(self, text: str = "", end: str = "\n") -> None: ...


class Game:
    """The state from the human's side: kazans and rows of both players."""

    def __init__(self, tb: Tablebase, human_first: bool = True, start: Position | None = None) -> None:
        self.tb = tb
        self.variant = tb.variant
        start = Position.start(self.variant) if start is None else tb.position(start)
        p = self.variant.pits
        # `start` is written from the side to move, who is the human when it moves first.
        own_k, other_k, own, other = start.k1, start.k2, start.pits[:p], start.pits[p:]
        if human_first:
            self.human_k, self.oracle_k, self.human, self.oracle = own_k, other_k, own, other
        else:
            self.human_k, self.oracle_k, self.human, self.oracle = other_k, own_k, other, own
        self.human_to_move = human_first
        self.history: list[str] = []
        self.seen = Counter([self._key()])
        self.winner: str | None = None  # "you" or "oracle" once the game is won

    def _key(self) -> _Key:
        return (self.human_to_move, self.human_k, self.oracle_k, self.human, self.oracle)

    def position(self) -> Position:
        """The position from the side to move, as the tablebase indexes it."""
        if self.human_to_move:
            return Position(self.human_k, self.oracle_k, self.human + self.oracle, self.variant)
        return Position(self.oracle_k, self.human_k, self.oracle + self.human, self.variant)

    def play(self, pit: int) -> tuple[int, bool]:
        """Sow the mover's `pit` (0-based); returns (captured, the mover won at once)."""
        v = self.variant
        pos = self.position()
        after = np.empty(v.board, np.int64)
        outcome, captured = rules.sow_and_capture(pos.board(), pit, v.pits, pos.k1, v.win_kazan, after)
        if outcome == rules.MOVE_EMPTY:
            raise ValueError(f"pit {pit} is empty")
        own, other = tuple(int(x) for x in after[: v.pits]), tuple(int(x) for x in after[v.pits :])
        mover = "You" if self.human_to_move else "Oracle"
        self.history.append(f"{mover} {pit + 1}" + (f"x{captured}" if captured else ""))
        if self.human_to_move:
            self.human_k += int(captured)
            self.human, self.oracle = own, other
        else:
            self.oracle_k += int(captured)
            self.oracle, self.human = own, other
        won = outcome == rules.MOVE_WIN
        if won:
            self.winner = "you" if self.human_to_move else "oracle"
        self.human_to_move = not self.human_to_move
        if not won:
            self.seen[self._key()] += 1
        return int(captured), won

    def repeated(self) -> bool:
        return self.seen[self._key()] >= 3

    def render(self) -> str:
        p = self.variant.pits
        cell: Callable[[Iterable[int]], str] = lambda xs: " ".join(f"{x:3d}" for x in xs)  # noqa: E731
        pad = " " * 19
        return "\n".join(
            [
                f"{pad}{cell(range(p, 0, -1))}     the oracle's pits (it sows right to left)",
                f"  Oracle  kazan{self.oracle_k:3d} [{cell(reversed(self.oracle))} ]",
                f"  You     kazan{self.human_k:3d} [{cell(self.human)} ]",
                f"{pad}{cell(range(1, p + 1))}     your pits (you sow left to right)",
            ]
        )

    def move_list(self) -> str:
        return "  ".join(f"{i}. {m}" for i, m in enumerate(self.history, 1)) or "(none)"


def _verdict(before: Probe, move: Move) -> str:
    """What the human's move did to the value of their position."""
    if move.value == before.value:
        if before.value == WIN:
            if before.dtz is not None and move.dtz is not None and move.dtz > before.dtz:
                return f"keeps the win, though not the fastest ({plies(move.dtz)} instead of {before.dtz})"
            return "keeps the win"
        if before.value == DRAW:
            return "keeps the draw"
        if before.dtz is not None and move.dtz is not None and move.dtz < before.dtz:
            return f"the position was already lost, and this loses faster ({plies(move.dtz)} instead of {before.dtz})"
        return "the position was already lost"
    what = {WIN: "win", DRAW: "draw", LOSS: "loss"}
    size = "a blunder" if NUMBER_OF[before.value] - NUMBER_OF[move.value] == 2 else "a mistake"
    return f"{size}: your {what[before.value]} is now a {what[move.value]}"


def _outlook(value: str, dtz: int | None) -> str:
    text = {WIN: "you can win", DRAW: "it is a draw with best play", LOSS: "the oracle wins with best play"}[
        value
    ]
    return text if dtz is None else f"{text} ({plies(dtz)} to the next capture or the end)"


def _hints(moves: list[Move], p: int) -> str:
    by_pit = {m.pit: m for m in moves}
    parts = []
    for i in range(p):
        m = by_pit.get(i)
        if m is None:
            parts.append(f"{i + 1}: empty")
        else:
            took = f", captures {m.captured}" if m.captured else ""
            end = ", ends the game" if m.ends_game else ""
            parts.append(f"{i + 1}: {m.value}" + (f" in {m.dtz}" if m.dtz is not None else "") + took + end)
    return "Your moves -> " + " | ".join(parts)


def play_game(
    tb: Tablebase,
    human_first: bool = True,
    start: Position | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> str:
    """Play one game on the streams; returns "you", "oracle", "draw" or "quit"."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    game = Game(tb, human_first, start)
    p = tb.variant.pits

    def say(text: str = "", end: str = "\n") -> None:
        print(text, end=end, file=stdout, flush=True)

    def finish(result: str, message: str) -> str:
        say()
        say(game.render())
        say(f"Game over: {message}")
        say(f"Moves: {game.move_list()}")
        return result

    def won_by(who: str) -> str:
        you = who == "you"
        mine, theirs = (game.human_k, game.oracle_k) if you else (game.oracle_k, game.human_k)
        if mine >= tb.variant.win_kazan:
            how = f"{mine} stones in {'your' if you else 'its'} kazan against {theirs}"
        else:
            how = "the oracle's row is empty" if you else "your row is empty"
        return finish(who, f"{'you win' if you else 'the oracle wins'}: {how}.")

    say(f"Bestemshe, {tb.variant.describe()}, against the tablebase at {tb.url}.")
    say(
        f"You move {'first' if human_first else 'second'}. Type a pit number 1..{p}, h for the value "
        "of each move, q to quit."
    )
    warned = False
    while True:
        found = tb.analyse(game.position())  # the value checked against its moves first
        moves = found.moves
        if not found.verified and not warned:
            say(f"Note: {UNVERIFIED}.")
            warned = True
        if not moves:
            if game.human_to_move:
                return finish("oracle", "you have no stone to sow, so the oracle wins.")
            return finish("you", "the oracle has no stone to sow, so you win.")
        if game.human_to_move:
            before = found.probe
            say()
            say(game.render())
            say(f"Tablebase: {_outlook(before.value, before.dtz)}.   Moves: {game.move_list()}")
            pit = _ask(stdin, say, moves, p)
            if pit is None:
                return finish("quit", "you quit.")
            move = next(m for m in moves if m.pit == pit)
            captured, won = game.play(pit)
            took = f", capturing {captured}" if captured else ""
            say(f"You sow pit {pit + 1}{took}: {_verdict(before, move)}.")
            if won:
                return won_by("you")
        else:
            choice = found.best_move()
            assert choice is not None  # there are moves, so there is a best one
            captured, won = game.play(choice.pit)
            took = f", capturing {captured}" if captured else ""
            say(f"The oracle sows its pit {choice.pit + 1}{took} ({choice.reason}).")
            if won:
                return won_by("oracle")
        if game.repeated():
            return finish(
                "draw",
                "the same position came up a third time with the same player to move, so the game is a draw.",
            )


def _ask(stdin: TextIO, say: _Say, moves: list[Move], p: int) -> int | None:
    """The human's pit (0-based), or None to quit (q or end of input)."""
    legal = sorted(m.pit for m in moves)
    while True:
        say(f"Your move (1-{p}, h, q): ", end="")
        line = stdin.readline()
        if not line:
            say()
            return None
        text = line.strip().lower()
        if text in ("q", "quit", "exit"):
            return None
        if text in ("h", "?", "help", "hint", "hints"):
            say(_hints(moves, p))
            continue
        if not text.isdigit() or not 1 <= int(text) <= p:
            say(f"'{line.strip()}' is not a pit: type a number from 1 to {p}, h or q.")
            continue
        pit = int(text) - 1
        if pit not in legal:
            choose = (
                f"pit {legal[0] + 1}" if len(legal) == 1 else "one of " + ", ".join(str(i + 1) for i in legal)
            )
            say(f"Pit {pit + 1} is empty: choose {choose}.")
            continue
        return pit
