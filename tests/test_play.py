"""`bestemshe-dist play`: the terminal game, driven through injected streams."""

import io
import subprocess
import sys

import pytest
from conftest import FIXTURE_M40, ROOT
from oracle_support import layer_positions

from bestemshe_dist import Position, Tablebase
from bestemshe_dist.cli import main
from bestemshe_dist.oracle.play import Game, play_game


@pytest.fixture(scope="module")
def tb(tb123):
    return Tablebase.open(str(tb123[0]))


def _play(tb, text, **kwargs):
    out = io.StringIO()
    result = play_game(tb, stdin=io.StringIO(text), stdout=out, **kwargs)
    return result, out.getvalue()


def test_the_board_is_drawn_from_the_humans_side(tb):
    game = Game(tb, human_first=False, start=Position.parse("2 4 0 1 2 2 1 0", tb.variant))
    # The start is written from the side to move, the oracle: its row is 0 1 2.
    assert (game.oracle_k, game.human_k, game.oracle, game.human) == (2, 4, (0, 1, 2), (2, 1, 0))
    lines = game.render().splitlines()
    assert "Oracle  kazan  2 [  2   1   0 ]" in lines[1]  # its pit 1 is on the right
    assert "You     kazan  4 [  2   1   0 ]" in lines[2]
    assert game.position() == Position.parse("2 4 0 1 2 2 1 0", tb.variant)
    assert game.play(2) == (0, False)  # its pit 3 (2 stones): one stays, one to your pit 1
    assert (game.oracle, game.human, game.human_to_move) == ((0, 1, 1), (3, 1, 0), True)
    assert game.position() == Position.parse("4 2 3 1 0 0 1 1", tb.variant)
    assert game.history == ["Oracle 3"]


def test_a_whole_game_against_a_pit_cycling_human(tb):
    result, out = _play(tb, "1\n2\n3\n" * 200)
    assert result in ("oracle", "draw")  # the start is a draw: the human can never win
    assert "Game over: " in out and "\nMoves: 1. You " in out
    assert out.count("Tablebase: ") >= 2 and "The oracle sows its pit" in out
    assert "is empty: choose " in out or "keeps the draw" in out


def test_quit_and_end_of_input(tb):
    for text in ("q\n", "quit\n", ""):
        result, out = _play(tb, text, human_first=False)
        assert result == "quit" and "Game over: you quit." in out
        assert "Moves: 1. Oracle " in out  # the oracle moved first


def test_bad_input_is_one_sentence_and_asked_again(tb):
    start = Position.parse("0 0 0 2 2 2 2 4", tb.variant)
    result, out = _play(tb, "x\n9\n0\n1\nh\nq\n", start=start)
    assert result == "quit"
    assert "'x' is not a pit: type a number from 1 to 3, h or q." in out
    assert "'9' is not a pit" in out and "'0' is not a pit" in out
    assert "Pit 1 is empty: choose one of 2, 3." in out
    assert "Your moves -> 1: empty | 2: " in out


def test_a_game_ending_capture_and_the_verdicts(tb):
    # Your pit 3 holds one stone; sown into the oracle's pit 1 (one stone) it makes 2,
    # captured: 6 + 2 = 8 is the winning kazan of the 12-stone game.
    result, out = _play(tb, "3\n", start=Position.parse("6 0 0 0 1 1 2 2", tb.variant))
    assert result == "you"
    assert "You sow pit 3, capturing 2: keeps the win." in out
    assert "Game over: you win: 8 stones in your kazan against 0." in out
    assert out.rstrip().endswith("Moves: 1. You 3x2")

    # A won position with a losing move: the verdict says what it threw away.
    for pos in layer_positions(tb.variant, 2, 2):
        moves = tb.moves(pos)
        if tb.probe(pos).value == "win" and any(m.value == "loss" for m in moves):
            break
    bad = next(m for m in moves if m.value == "loss")
    result, out = _play(tb, f"{bad.pit + 1}\nq\n", start=pos)
    assert f"You sow pit {bad.pit + 1}" in out and "a blunder: your win is now a loss." in out
    assert "Tablebase: the oracle wins with best play" in out


def test_the_oracle_converts_a_won_game_against_any_human(tb):
    # From every won position of a layer, the oracle moving first wins against a
    # human who keeps trying pits 1, 2, 3 (the position is won for the oracle).
    won = [p for p in layer_positions(tb.variant, 4, 2) if tb.probe(p).value == "win"][:25]
    for pos in won:
        result, out = _play(tb, "1\n2\n3\n" * 100, human_first=False, start=pos)
        assert result == "oracle", out
        assert "Game over: the oracle wins: " in out


def test_cli_play(tb, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("2\nq\n"))
    assert main(["play", tb.url, "--human", "second"]) == 0
    out = capsys.readouterr().out
    assert "You move second." in out and "Game over: you quit." in out
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    assert main(["play", str(FIXTURE_M40), "--start", "20 20 1 1 1 1 1 1 1 1 1 1"]) == 0
    assert "50 stones, 5 pits per side" in capsys.readouterr().out
    # An endgame folder holds no start: one sentence naming a layer it holds and a
    # --start to try, before the board is drawn (exit 2); that start then plays.
    assert main(["play", str(FIXTURE_M40)]) == 2
    got = capsys.readouterr()
    assert got.out == "" and got.err.count("\n") == 1, got
    assert got.err.startswith(
        f"bestemshe-dist play: {FIXTURE_M40} does not hold the starting layer 0_0 (it holds 15 layers, "
        'e.g. 20_20): pass --start with a position of a held layer, e.g. --start "20 20 '
    ), got.err
    example = got.err.split('--start "', 1)[1].split('"', 1)[0]
    assert Position.parse(example, Tablebase.open(str(FIXTURE_M40)).variant).layer == (20, 20)
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    assert main(["play", str(FIXTURE_M40), "--start", example]) == 0
    assert "Game over: you quit." in capsys.readouterr().out
    assert main(["play", str(FIXTURE_M40), "--start", "0 2 4 4 4 4 4 4 4 4 8 8"]) == 2
    assert "does not hold layer 0_2 of --start 0 2 4 4 4 4 4 4 4 4 8 8 (it holds 15 layers" in (
        capsys.readouterr().err
    )
    assert main(["play", tb.url, "--start", "0 0 1 1 1"]) == 2
    assert capsys.readouterr().err.strip() == (
        "bestemshe-dist play: position: expected 8 numbers (k1 k2 p0..p5) for the game of "
        "12 stones, 3 pits per side, got 5."
    )


def test_play_as_a_process(tb):
    done = subprocess.run(
        [sys.executable, "-m", "bestemshe_dist", "play", tb.url],
        input="1\nq\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0 and done.stderr == ""
    assert "You sow pit 1" in done.stdout and "Game over: you quit." in done.stdout
