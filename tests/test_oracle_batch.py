"""Tablebase.probe_many (many positions in one pass, each block read once) and
Tablebase.mainline (perfect play to the end), against one-by-one probes and the
solver's own tables; the `mainline` command."""

import json

import numpy as np
import pytest
from conftest import FIXTURE_M40, run_cli
from oracle_support import random_positions, truth

from bestemshe_dist import Position, Tablebase
from bestemshe_dist.data import format as fmt
from bestemshe_dist.errors import UsageError
from bestemshe_dist.oracle import Probe


def _rows(positions):
    return np.array([(p.k1, p.k2, *p.pits) for p in positions], np.int64)


def test_probe_many_equals_the_solver_tables_for_every_position(tb123):
    folder, tables = tb123
    tb = Tablebase.open(str(folder))
    positions = [
        Position.from_rank(tb.variant, k1, k2, i)
        for (k1, k2) in sorted(tables)
        for i in range(tb.variant.layer_size(k1, k2))
    ]
    order = np.random.default_rng(1).permutation(len(positions))  # any order, answered in that order
    positions = [positions[i] for i in order]
    got = tb.probe_many(_rows(positions))
    assert len(got) == len(positions)
    for i, pos in enumerate(positions):
        value, dtz = truth(tables, pos.k1, pos.k2, pos.rank())
        assert got[i].value == value and got[i].dtz == dtz, str(pos)
    # the same from positions as text, and as Position objects
    few = positions[:50]
    for given in ([str(p) for p in few], few):
        again = tb.probe_many(given)
        assert np.array_equal(again.value, got.value[:50]) and np.array_equal(again.dtz, got.dtz[:50])
    assert len(tb.probe_many(np.zeros((0, 8), np.int64))) == 0


def test_probe_many_reads_each_block_once_and_equals_one_by_one_on_the_published_files():
    tb = Tablebase.open(str(FIXTURE_M40))
    rng = np.random.default_rng(5)
    layers = [
        (k1, k2)
        for k1 in tb.variant.kazans
        for k2 in tb.variant.kazans
        if k1 + k2 >= 40 and (FIXTURE_M40 / f"layer_{k1}_{k2}_win.bin").exists()
    ]
    positions = [
        Position.from_rank(tb.variant, k1, k2, int(rng.integers(tb.variant.layer_size(k1, k2))))
        for _ in range(40)
        for (k1, k2) in layers
    ]
    batch = tb.probe_many(_rows(positions))
    one = Tablebase.open(str(FIXTURE_M40))
    assert [batch[i] for i in range(len(positions))] == [one.probe(p) for p in positions]
    # each header, checksum file and block read once, no more than the one-by-one
    # probes read with their cache (the draw file only where a position is no win)
    assert tb.requests == one.requests
    wins = batch.value == 1
    touched = {
        (p.k1, p.k2, kind, p.rank() // fmt.BLOCK_BITS)
        for p, win in zip(positions, wins)
        for kind in (("win",) if win else ("win", "draw"))
    }
    files = {(k1, k2, kind) for k1, k2, kind, _ in touched}
    assert tb.requests == len(touched) + len(files) + len({f[:2] for f in files})


@pytest.mark.parametrize(
    "rows, needle",
    [
        (np.zeros((3, 7), np.int64), r"expected an integer array of shape \(N, 12\)"),
        (np.zeros((2, 12), np.float64), "expected an integer array"),
        ([[0, 0] + [5] * 10, [1, 0] + [5] * 10], "positions: row 1: k1 = 1 is odd"),
        ([[0, 0] + [5] * 10, [0, 0] + [5] * 9 + [4]], "positions: row 1: the pits hold 49 stones"),
        ([[0, 26] + [2] * 10], "positions: row 0: k2 = 26 is out of range"),
        ([[0, 0] + [-1] + [5] * 9], "positions: row 0: p0 = -1 is negative"),
    ],
)
def test_probe_many_names_the_first_bad_row_before_reading(rows, needle):
    tb = Tablebase.open(str(FIXTURE_M40))
    with pytest.raises(UsageError, match=needle):
        tb.probe_many(np.asarray(rows) if isinstance(rows, np.ndarray) else np.array(rows, np.int64))
    assert tb.requests <= 1  # the manifest at most: no block


@pytest.mark.parametrize(
    "rows, needle",
    [
        (["0 0 5 5 5 5 5 5 5 5 5 5", None], "positions: row 1: give it as text or a list of numbers"),
        ([7], "positions: row 0: give it as text or a list of numbers .* not int"),
        (["20 20 1 1 1 1 1 1 1 1 1 1", [0, 0, 5]], "positions: row 1: expected 12 numbers"),
    ],
)
def test_probe_many_of_a_list_names_the_bad_row(rows, needle):
    with pytest.raises(UsageError, match=needle):
        Tablebase.open(str(FIXTURE_M40)).probe_many(rows)


def _phases(line):
    """Plies from the start to the first capture or the end of the game (a move that
    wins at once, or a mover left without a move)."""
    for i, ply in enumerate(line.plies):
        if ply.move.exits:
            return i + 1
    return len(line.plies) if line.result in ("win", "loss") else None


def test_mainlines_end_in_the_value_and_a_win_takes_its_stored_distance(tb123):
    folder, tables = tb123
    tb = Tablebase.open(str(folder))
    for value in ("win", "loss"):
        for pos in random_positions(tb.variant, tables, 40, seed=3, value=value):
            line = tb.mainline(pos)
            assert line.value.value == value and line.result == value, str(pos)
            # the first stretch to a capture or the end takes exactly the stored distance
            assert _phases(line) == line.value.dtz, str(pos)
            for ply in line.plies:  # every ply keeps the value, seen from its mover
                mover = tb.probe(ply.position).value
                assert ply.after is None or ply.after.value == {"win": "loss", "loss": "win"}[mover]
    for pos in random_positions(tb.variant, tables, 20, seed=4, value="draw"):
        line = tb.mainline(pos, max_plies=200)
        assert line.result == "repetition" and all(p.after.value == "draw" for p in line.plies), str(pos)
    full = next(
        line
        for line in map(tb.mainline, random_positions(tb.variant, tables, 40, seed=6, value="win"))
        if len(line.plies) >= 3
    )
    cut = tb.mainline(full.start, max_plies=2)
    assert cut.result == "limit" and cut.plies == full.plies[:2]


def test_mainline_command_prints_the_game_and_its_result(tb123):
    folder, tables = tb123
    tb = Tablebase.open(str(folder))
    pos = random_positions(tb.variant, tables, 1, seed=8, value="win")[0]
    done = run_cli("mainline", folder, str(pos), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    line = tb.mainline(pos)
    assert data["result"] == "win" and data["plies"] == len(line.plies)
    assert [m["index"] for m in data["moves"]] == [p.move.pit for p in line.plies]
    assert all(m["pit"] == m["index"] + 1 for m in data["moves"]) and data["category"] == "win"
    text = run_cli("mainline", folder, str(pos))
    assert text.returncode == 0 and "result    the side to move at the start wins" in text.stdout
    bad = run_cli("mainline", folder, "0", "1", "2")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "position: expected" in bad.stderr


def test_stats_equal_the_solver_tables(tb123):
    folder, tables = tb123
    tb = Tablebase.open(str(folder))
    stats = tb.stats()
    assert {(s["k1"], s["k2"]) for s in stats["layers"]} == set(tables)
    longest = {"win": (-1, None), "loss": (-1, None)}
    for s in stats["layers"]:
        _codes, dtz = tables[(s["k1"], s["k2"])]
        npos = tb.variant.layer_size(s["k1"], s["k2"])
        values = np.array([truth(tables, s["k1"], s["k2"], i)[0] for i in range(npos)])
        assert (s["positions"], s["win"], s["draw"], s["loss"]) == (
            npos,
            int((values == "win").sum()),
            int((values == "draw").sum()),
            int((values == "loss").sum()),
        )
        for value in ("win", "loss"):
            mine = dtz[values == value]
            got = s["distances"][value]
            assert got["histogram"] == (np.bincount(mine).tolist() if len(mine) else [])
            if len(mine):
                assert got["longest"] == int(mine.max())
                assert tb.probe(got["example"]) == Probe(value, int(mine.max()))
                longest[value] = max(longest[value], (got["longest"], got["example"]), key=lambda t: t[0])
            else:
                assert got["longest"] is None and got["example"] is None
    total = stats["total"]
    assert total["positions"] == sum(tb.variant.layer_size(*l) for l in tables)
    assert total["win"] + total["draw"] + total["loss"] == total["positions"]
    for value in ("win", "loss"):
        assert total["longest"][value]["distance"] == longest[value][0]
    # the manifest's counts, where a layer has no distance table to read
    bare = Tablebase.open(str(folder))
    bare.reader.dtz_width = lambda k1, k2: None
    for s in stats["layers"]:
        again = bare.layer_stats(s["k1"], s["k2"])
        assert (again["win"], again["draw"], again["loss"]) == (s["win"], s["draw"], s["loss"])
        assert again["distances"] is None
    assert bare.requests == 0  # from the manifest alone


def test_stats_of_the_published_files_and_the_stats_command():
    tb = Tablebase.open(str(FIXTURE_M40))
    stats = tb.stats()
    assert len(stats["layers"]) == 15 and stats["total"]["longest"] == {"win": None, "loss": None}
    from bestemshe_dist.solve import code_arrays

    for s in stats["layers"]:
        codes = Tablebase.open(str(FIXTURE_M40)).reader.codes(s["k1"], s["k2"], s["positions"])
        assert (s["win"], s["loss"], s["draw"]) == tuple(
            int(c) for c in code_arrays.count_codes(codes, s["positions"])
        )
    done = run_cli("stats", FIXTURE_M40, "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["total"] == stats["total"]
    text = run_cli("stats", FIXTURE_M40)
    assert text.returncode == 0 and "  24_24              55" in text.stdout and "total" in text.stdout


def test_stats_pass_on_dask_equals_the_pass_in_process(tb123):
    """`stats --workers 2`: one Dask task a layer, in worker processes, the same
    report as the pass in this process (distance histograms and examples too)."""
    folder, tables = tb123
    here = run_cli("stats", folder, "--json")
    dask = run_cli("stats", folder, "--json", "--workers", "2")
    assert here.returncode == 0 and dask.returncode == 0, dask.stderr
    assert (
        json.loads(dask.stdout)
        == json.loads(here.stdout)
        == json.loads(json.dumps(Tablebase.open(str(folder)).stats()))
    )
    assert len(json.loads(dask.stdout)["layers"]) == len(tables)
