"""The oracle (Tablebase): probes equal the solver's tables, moves and best moves keep
the value, perfect play converts a won game, the seed client's defect is gone,
threads and the block cache are safe, and the CLI reports bad input in one sentence."""

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from math import comb

import numpy as np
import pytest
from conftest import FIXTURE_M40, run_cli
from oracle_support import (
    assert_every_probe_matches,
    layer_positions,
    random_positions,
    solve_into,
    solver_tables,
    truth,
)

from bestemshe_dist import Position, Tablebase
from bestemshe_dist.cli import main
from bestemshe_dist.data import format as fmt
from bestemshe_dist.errors import StoreError, UsageError
from bestemshe_dist.game.rules import rank
from bestemshe_dist.game.variant import Variant


@pytest.fixture(scope="module")
def tb83(client, tmp_path_factory):
    """8 stones, 3 pits, with distance tables: (folder, solver tables)."""
    folder = tmp_path_factory.mktemp("tb83")
    variant = solve_into(client, folder, 8, 3, dtz=True)
    return folder, solver_tables(folder, variant)


@pytest.mark.parametrize("stones,pits,dtz", [(8, 3, True), (6, 5, True), (10, 2, False), (8, 1, False)])
def test_every_probe_equals_the_solver_tables(client, tmp_path, stones, pits, dtz):
    variant = solve_into(client, tmp_path, stones, pits, dtz=dtz)
    tables = solver_tables(tmp_path, variant)
    tb = Tablebase.open(str(tmp_path))
    assert tb.variant == variant
    assert assert_every_probe_matches(tb, tables) == sum(variant.layer_size(*l) for l in variant.layers)
    # One header and one frame per file at most, and one checksum file per layer: the
    # cache holds every block of these layers.
    files = len(variant.layers) * (3 if dtz else 2)
    assert tb.requests <= 2 * files + len(variant.layers)
    assert all(tb.verified(*layer) for layer in variant.layers)


VALUE_ORDER = {"loss": 0, "draw": 1, "win": 2}


def _check_moves(tb, pos, tables):
    seen = tb.probe(pos)
    moves = tb.moves(pos)
    assert [m.pit for m in moves] == pos.legal_pits()
    timed = tb.has_distances(pos.k1, pos.k2)
    for m in moves:
        assert m.stones == pos.pits[m.pit] > 0
        if m.ends_game:
            assert m.child is None and m.value == "win" and m.dtz == (1 if timed else None)
            continue
        child_value, child_dtz = truth(tables, m.child.k1, m.child.k2, m.child.rank())
        assert m.value == {"win": "loss", "loss": "win", "draw": "draw"}[child_value]
        assert m.child_dtz == child_dtz
        assert m.child.layer == ((pos.k2, pos.k1 + m.captured))
        if m.value == "draw" or not timed:
            assert m.dtz is None
        else:
            assert m.dtz == (1 if m.captured else child_dtz + 1)
    best_value = max((m.value for m in moves), key=VALUE_ORDER.__getitem__, default="loss")
    assert seen.value == best_value, str(pos)
    choice = tb.best_move(pos)
    if not moves:
        assert choice is None and seen.dtz in (0, None)
        return choice
    assert choice.move.value == seen.value, str(pos)
    return choice


def test_moves_and_best_move_keep_the_value_with_distances(tb83):
    folder, tables = tb83
    tb = Tablebase.open(str(folder))
    checked = 0
    for layer in sorted(tables):
        for pos in layer_positions(tb.variant, *layer):
            choice = _check_moves(tb, pos, tables)
            seen = tb.probe(pos)
            if choice is not None and seen.value != "draw":
                # The winner's move realises the stored distance (shortest win), and so
                # does the loser's (longest loss): distances decided the choice.
                assert choice.guaranteed and choice.move.dtz == seen.dtz, str(pos)
                assert choice.move.dtz == (min if seen.value == "win" else max)(
                    m.dtz for m in tb.moves(pos) if m.value == seen.value
                )
            checked += 1
    assert checked == sum(tb.variant.layer_size(*l) for l in tables)


def test_best_move_without_distances_keeps_the_value_and_says_so(client, tmp_path):
    variant = solve_into(client, tmp_path, 10, 2)
    tables = solver_tables(tmp_path, variant)
    tb = Tablebase.open(str(tmp_path))
    wins = 0
    for layer in sorted(tables):
        for pos in layer_positions(variant, *layer):
            choice = _check_moves(tb, pos, tables)
            if choice is None or choice.move.value != "win":
                continue
            wins += 1
            moves = tb.moves(pos)
            if any(m.ends_game for m in moves):
                assert choice.move.ends_game and choice.guaranteed  # an immediate win first
                continue
            assert not choice.guaranteed and "not guaranteed" in choice.reason
            if any(m.captured and m.value == "win" for m in moves):
                assert choice.move.captured == max(m.captured for m in moves if m.value == "win")
    assert wins > 100


def _self_play(tb, pos, defender, rng, limit=2000):
    """The oracle moves first from `pos`; returns (winner, phases) where a phase is
    (stored distance where it starts, plies until the next capture or the end)."""
    oracle = True
    start, plies, phases, worst = tb.probe(pos).dtz, 0, [], VALUE_ORDER[tb.probe(pos).value]
    for _ in range(limit):
        if oracle:
            seen = tb.probe(pos)
            assert VALUE_ORDER[seen.value] >= worst, f"the oracle let {pos} slip to {seen.value}"
            worst = VALUE_ORDER[seen.value]
            move = tb.best_move(pos).move
        else:
            moves = tb.moves(pos)
            move = tb.best_move(pos).move if defender == "perfect" else moves[rng.integers(len(moves))]
        plies += 1
        if move.ends_game:
            phases.append((start, plies))
            return ("oracle" if oracle else "defender"), phases
        if move.captured:
            phases.append((start, plies))
            start, plies = tb.probe(move.child).dtz, 0
        pos, oracle = move.child, not oracle
    return "unfinished", phases


@pytest.mark.parametrize("defender", ["perfect", "random"])
def test_self_play_converts_every_won_position_within_the_distances(tb123, defender):
    folder, tables = tb123
    tb = Tablebase.open(str(folder))
    rng = np.random.default_rng(7)
    sample = random_positions(tb.variant, tables, 60, seed=11, value="win")
    for pos in sample:
        winner, phases = _self_play(tb, pos, defender, rng)
        assert winner == "oracle", str(pos)
        for stored, plies in phases:
            # Each stretch between captures takes at most the stored distance, exactly
            # that against a perfect defender; so the game ends within their sum.
            assert plies == stored if defender == "perfect" else plies <= stored, (str(pos), phases)
        assert sum(p for _, p in phases) <= sum(s for s, _ in phases)


@pytest.mark.parametrize("defender", ["perfect", "random"])
def test_self_play_never_loses_a_drawn_position(tb123, defender):
    folder, tables = tb123
    tb = Tablebase.open(str(folder))
    rng = np.random.default_rng(3)
    sample = random_positions(tb.variant, tables, 40, seed=5, value="draw")
    results = [_self_play(tb, pos, defender, rng, limit=60)[0] for pos in sample]
    assert "defender" not in results
    if defender == "perfect":
        assert set(results) == {"unfinished"}  # neither side can force a win
    else:
        assert "oracle" in results  # and a random player's slips are punished


@cache
def _whole_file(path):
    return fmt.decode_file(path.read_bytes(), path.name)  # every block, padding included


def _seed_client(folder, k1, k2, pits):
    """The seed script's reader (SPEC.md, "The seed client's defect"): it adds
    I_K * C(r + 9, 9) to the rank, so it reads past the layer's data."""
    m, r = k1 + k2, 50 - k1 - k2
    size = comb(r + 9, 9)
    index = (k1 - max(0, m - 24)) // 2 * size + int(rank(np.array(pits, np.int64), Variant(50, 5).binom))
    bits = {}
    for kind in ("win", "draw"):
        raw = _whole_file(folder / f"layer_{k1}_{k2}_{kind}.bin")
        bits[kind] = (raw[index // 8] >> (index % 8)) & 1 if index < 8 * raw.shape[0] else 0
    return "win" if bits["win"] else "draw" if bits["draw"] else "loss"


def test_seed_client_defect_is_not_repeated(client, tmp_path):
    variant = solve_into(client, tmp_path, 50, 5, min_captured=44)
    tables = solver_tables(tmp_path, variant)
    tb = Tablebase.open(str(FIXTURE_M40))  # the published files: a bare folder, so 50/5
    assert tb.manifest is None and tb.variant == Variant(50, 5)
    wrong_layers = set()
    for k1, k2 in sorted(tables):
        m = k1 + k2
        shifted = k1 > max(0, m - 24)
        differ = 0
        for x, pos in enumerate(layer_positions(variant, k1, k2)):
            want = truth(tables, k1, k2, x)[0]
            assert tb.probe(pos).value == want, str(pos)
            seed = _seed_client(FIXTURE_M40, k1, k2, pos.pits)
            if not shifted:
                assert seed == want, str(pos)  # the formula is right where I_K = 0
            elif seed != want:
                differ += 1
                assert seed == "loss"
        if shifted:
            assert differ > 0, (k1, k2)
            wrong_layers.add((k1, k2))
    assert wrong_layers == {(22, 22), (24, 20), (24, 22)}


def test_threads_share_one_fetch_and_the_cache_keeps_its_bound(tb83):
    folder, tables = tb83
    bound = 600  # bytes: a few of this tablebase's blocks (a small layer keeps only its bytes)
    tb = Tablebase.open(str(folder), cache_bytes=bound)
    positions = [p for layer in sorted(tables) for p in layer_positions(tb.variant, *layer)]
    want = [truth(tables, p.k1, p.k2, p.rank()) for p in positions]

    def run(seed):
        order = np.random.default_rng(seed).permutation(len(positions))[:600]
        for i in order:
            got = tb.probe(positions[i])
            assert (got.value, got.dtz) == want[i]
        return len(order)

    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(run, range(8))) == 8 * 600
    stats = tb.reads()
    # The bound holds (a block larger than it is used, then dropped: the cache may
    # end empty, depending on which thread probed last), and blocks were reused.
    assert stats["cached_bytes"] <= bound and stats["cache_hits"] > 0
    assert stats["requests"] > 2 * 27  # blocks were evicted and fetched again

    # Eight threads wanting the same block at once: one header read and one frame read.
    fresh = Tablebase.open(str(folder))
    win = next(p for p, w in zip(positions, want) if w[0] == "win" and p.layer == (0, 0))
    barrier = threading.Barrier(8)

    def probe(_):
        barrier.wait()
        return fresh.probe(win).value

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(probe, range(8))) == {"win"}
    assert fresh.requests == 5  # the layer's checksum file, then win and dtz files: header + frame each


def test_position_parsing_and_validation():
    v = Variant(50, 5)
    start = Position.parse("0 0 5 5 5 5 5 5 5 5 5 5", v)
    assert start == Position.start(v) and str(start) == "0 0 5 5 5 5 5 5 5 5 5 5"
    assert Position.parse(["2", "4"] + [4] * 9 + [8], v).k2 == 4
    assert Position.from_rank(v, 0, 0, start.rank()) == start
    bad = {
        "0 0 5 5 5 5 5 5 5 5 5": "expected 12 numbers",
        "1 0 5 5 5 5 5 5 5 5 5 4": "k1 = 1 is odd",
        "0 26 5 5 5 5 5 5 5 5 5 5": "k2 = 26 is out of range",
        "0 0 5 5 5 5 5 5 5 5 5 4": "the pits hold 49 stones",
        "0 0 5 5 5 5 5 -5 5 5 5 15": "p5 = -5 is negative",
        "0 0 5 5 5 5 5 5 5 5 5 5.0": "p9 = '5.0' is not an integer",
        "0 0 5 5 5 5 five 5 5 5 5 5": "p4 = 'five' is not an integer",
    }
    for text, needle in bad.items():
        with pytest.raises(UsageError, match=needle):
            Position.parse(text, v)
    with pytest.raises(UsageError, match="no start with equal pits"):
        Position.start(Variant(8, 3))


def _cli(capsys, *args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_probe_text_and_json(tb83, capsys):
    folder, tables = tb83
    rc, out, err = _cli(capsys, "probe", folder, "0", "4", "2", "1", "0", "0", "0", "1", "--json")
    assert rc == 0 and err == ""
    data = json.loads(out)
    pos = Position.parse("0 4 2 1 0 0 0 1", Variant(8, 3))
    assert (data["category"], data["dtz"]) == truth(tables, 0, 4, pos.rank()) == ("win", 3)
    # Best first; pits numbered 1..pits as a person reads them, `index` 0-based.
    assert [m["index"] for m in data["moves"]] == [1, 0] and data["best_move"] == 2
    assert data["moves"][0] == {
        "pit": 2,
        "index": 1,
        "stones": 1,
        "captured": 0,
        "ends_game": False,
        "child": "4 0 0 0 1 2 0 1",
        "category": "win",
        "dtz": 3,
        "child_dtz": 2,
    }
    assert data["conversion_guaranteed"] is True
    rc, out, _ = _cli(capsys, "probe", folder, "0 4 2 1 0 0 0 1")  # one quoted argument works too
    # The text numbers pits 1..pits too, as play does, and lists them pit by pit.
    assert rc == 0 and "win in 3 plies" in out and "best      pit 2: shortest win" in out


@pytest.mark.parametrize(
    "numbers,needle",
    [
        ("0 0 2 1 1 2 1", "expected 8 numbers (k1 k2 p0..p5)"),
        ("3 0 2 1 1 2 1 1", "k1 = 3 is odd"),
        ("6 0 1 1 0 0 0 0", "k1 = 6 is out of range"),
        ("0 0 2 1 1 2 1 2", "the pits hold 9 stones"),
        ("0 0 2 -1 1 2 1 1", "p1 = -1 is negative"),
        ("0 0 2 1.5 1 2 1 1", "p1 = '1.5' is not an integer"),
    ],
)
def test_cli_bad_positions_are_one_sentence_exit_2(tb83, capsys, numbers, needle):
    rc, out, err = _cli(capsys, "probe", tb83[0], *numbers.split())
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("bestemshe-dist probe: position: ") and needle in err


def test_cli_missing_and_corrupt_files_exit_1_naming_the_file(tb83, tmp_path, capsys):
    folder, _ = tb83
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in folder.iterdir():
        if f.is_file():
            (copy / f.name).write_bytes(f.read_bytes())
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["layers"]["2_4"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    (copy / "layer_4_2_win.bin").unlink()
    head = bytearray((copy / "layer_0_0_win.bin").read_bytes())
    head[4] ^= 1
    (copy / "layer_0_0_win.bin").write_bytes(bytes(head))
    cases = {
        "2 4 0 1 0 0 0 1": f"{copy}/layer_2_4_win.bin is missing: layer 2_4 is not in this tablebase",
        "4 2 0 1 0 0 0 1": f"cannot read {copy}/layer_4_2_win.bin: it does not exist",
        "0 0 2 1 1 2 1 1": f"{copy}/layer_0_0_win.bin: its header (block count and offsets) fails its "
        f"checksum in {copy}/layer_0_0.sums.json",
    }
    for numbers, needle in cases.items():
        rc, out, err = _cli(capsys, "probe", copy, *numbers.split())
        assert rc == 1 and out == "" and err.count("\n") == 1 and needle in err, err
    rc, _, err = _cli(capsys, "probe", tmp_path / "nowhere", "0 0 5 5 5 5 5 5 5 5 5 5")
    assert rc == 1 and "nowhere holds no tablebase: no manifest.json and no layer_<k1>_<k2>_win.bin" in err
    # A bare folder is the 50-stone game: a layer it lacks is a missing file.
    rc, _, err = _cli(capsys, "probe", FIXTURE_M40, "0 0 5 5 5 5 5 5 5 5 5 5")
    assert rc == 1 and "layer_0_0_win.bin: it does not exist" in err


def test_cli_probe_as_a_process_published_fixture():
    done = run_cli("probe", FIXTURE_M40, "20", "20", *["1"] * 10, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["category"] in ("win", "draw", "loss") and data["dtz"] is None
    assert len(data["moves"]) == 5 and data["conversion_guaranteed"] is False
    bad = run_cli("probe", FIXTURE_M40, "20", "21", *["1"] * 10)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert (
        bad.stderr.strip()
        == "bestemshe-dist probe: position: k2 = 21 is odd; every capture is even, so kazans are too."
    )


def test_api_errors_are_bestemshe_errors(tb83):
    tb = Tablebase.open(str(tb83[0]))
    with pytest.raises(UsageError):
        tb.probe("0 0 1 1 1 1 1 1 1 1 1 1")  # a 50/5 position in an 8/3 tablebase
    with pytest.raises(UsageError, match="belongs to the game of 50 stones"):
        tb.probe(Position.start(Variant(50, 5)))
    with pytest.raises(StoreError):
        Tablebase.open(str(tb83[0] / "nope"))
