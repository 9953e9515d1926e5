"""Rounds of a pair: counting == frontier == sweep == brute force, un-moves invert moves."""

import bruteforce as bf
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bestemshe_dist.data.checkpoint import decode_part, encode_part
from bestemshe_dist.game import rules
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.solve import code_arrays, counting, kernels
from bestemshe_dist.solve.pair import COUNTING, FRONTIER, SWEEP, Delta, solve_pair


def solve_variant(variant, method):
    """Every layer of a variant in DAG order, in memory; returns codes and rounds."""
    codes, rounds = {}, {}
    top = 2 * (variant.win_kazan - 2)
    for m in range(top, -1, -2):
        for a in variant.kazans:
            b = m - a
            if a <= b and b in variant.kazans:
                seen = {}
                result = solve_pair(
                    variant,
                    a,
                    b,
                    codes,
                    method,
                    on_round=lambda r, ds: seen.update(
                        {(d.layer, int(x)): r for d in ds for x in d.decisions()[0]}
                    ),
                )
                codes.update(result.codes)
                rounds.update(seen)
    return codes, rounds


@pytest.mark.parametrize("stones,pits", [(12, 2), (12, 3), (8, 4), (10, 5), (14, 1)])
def test_counting_equals_frontier_equals_sweep_equals_bruteforce(stones, pits, monkeypatch):
    """Values and rounds (so distances) of the three methods equal the brute force. The
    sweep is pipelined (kernels.AHEAD positions in flight): the larger variants fill
    its queue many times over and drain it at every range's end, the smallest never
    fill it. The frontier's pipelines (kernels.PREDS predecessors, kernels.CHECKS
    re-checks in flight) are filled and drained the same way, as are counting's
    (its first pass is pipelined as the sweep, its walks as the frontier's)."""
    variant = Variant(stones, pits)
    if (stones, pits) == (10, 5):
        assert max(variant.layer_size(*layer) for layer in variant.layers) > 1000 * kernels.AHEAD
    values, distance = bf.solve(stones, pits, with_distance=True)
    by_method = {m: solve_variant(variant, m) for m in (COUNTING, FRONTIER, SWEEP)}
    # Counting with every walk's predecessors gathered and updated in rank order
    # (as on a large layer), in batches small enough to be sorted many times a walk.
    monkeypatch.setattr(counting, "SORT_ABOVE_BYTES", -1)
    monkeypatch.setattr(counting, "SORT_BATCH", 64)
    by_method["counting, sorted walks"] = solve_variant(variant, COUNTING)
    for layer, table in values.items():
        for method, (codes, rounds) in by_method.items():
            for board, value in table.items():
                x = bf.rank(board)
                code = int(code_arrays.get_code(codes[layer], x))
                assert code == {"W": code_arrays.WIN, "L": code_arrays.LOSS, "D": code_arrays.UNKNOWN}[value]
                # Rounds are one ply each: decided in round d means distance d + 1,
                # except positions with no move (distance 0, decided in round 0).
                if value != "D":
                    d = rounds[(layer, x)]
                    expected = distance[layer][board]
                    assert (d + 1 if expected else 0) == expected, (method, layer, board)


@pytest.mark.parametrize("stones,pits", [(12, 3), (10, 5), (8, 2), (6, 1), (10, 4)])
def test_unmoves_are_exactly_the_inverse_of_quiet_moves(stones, pits):
    variant = Variant(stones, pits)
    n = variant.board
    preds = np.zeros((rules.max_unmoves(pits), n), np.int64)
    for k1, k2 in variant.layers:
        expected = {}
        for board in bf.positions(stones, pits, k2, k1):
            for i in range(pits):
                moved = bf.move(stones, pits, k2, k1, board, i)
                if moved and moved[0] == "child" and moved[2] == 0:
                    expected.setdefault(moved[1][2], set()).add(board)
        for child in bf.positions(stones, pits, k1, k2):
            count = rules.unmoves(np.array(child, np.int64), pits, preds)
            got = [tuple(int(v) for v in row) for row in preds[:count]]
            assert len(set(got)) == count
            assert set(got) == expected.get(child, set()), (k1, k2, child)
            _check_unmove_ranks(np.array(child, np.int64), pits, variant.binom)


def _check_unmove_ranks(child, pits, binom):
    """The frontier kernel ranks predecessors without building them: same ranks."""
    n = 2 * pits
    after = np.zeros(n, np.int64)
    specs = np.zeros((rules.max_unmoves(pits), 3), np.int64)
    row = np.zeros(n, np.int64)
    for pit, laps, rest in specs[: rules.unmove_specs(child, pits, after, specs)]:
        rules.unmove_board(after, pits, pit, laps, rest, row)
        assert rules.unmove_rank(after, pits, pit, laps, rest, binom) == rules.rank(row, binom)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_unmoves_round_trip_on_the_50_stone_game(data):
    variant = Variant(50, 5)
    k1, k2 = data.draw(st.sampled_from(variant.layers))
    x = data.draw(st.integers(0, variant.layer_size(k1, k2) - 1))
    child = np.zeros(10, np.int64)
    rules.unrank(x, variant.board_stones(k1, k2), variant.binom, child)
    preds = np.zeros((rules.max_unmoves(5), 10), np.int64)
    count = rules.unmoves(child, 5, preds)
    _check_unmove_ranks(child, 5, variant.binom)
    for row in preds[:count]:
        # Every un-move's forward move gives the position back, without capture.
        hits = [rules.play(variant, k2, k1, row, i) for i in range(5)]
        assert any(h and h[0] == "child" and h[2] == 0 and tuple(h[1][2]) == tuple(child) for h in hits)
    # And every quiet child of the position has it among its un-moves.
    for i in range(5):
        moved = rules.play(variant, k1, k2, child, i)
        if moved and moved[0] == "child" and moved[2] == 0:
            grand = np.asarray(moved[1][2], np.int64)
            c = rules.unmoves(grand, 5, preds)
            assert any((preds[j] == child).all() for j in range(c))


def test_delta_round_trips_through_bytes():
    dense = code_arrays.new_codes(100)
    for i, code in ((0, 1), (37, 2), (99, 1)):
        code_arrays.set_code(dense, i, code)
    d = Delta((2, 4), 3, 1000, 1100, dense=dense, wins=2, losses=1, evaluations=7)
    back = decode_part(encode_part(d))
    assert (back.dense == dense).all() and back.layer == (2, 4) and back.round == 3
    assert back.decisions()[0].tolist() == [1000, 1037, 1099]
    sparse = d.sparse()
    back = decode_part(encode_part(sparse))
    assert back.ranks.tolist() == [1000, 1037, 1099] and back.values.tolist() == [1, 2, 1]
    codes = code_arrays.new_codes(2000)
    back.apply(codes)
    assert [int(code_arrays.get_code(codes, i)) for i in (999, 1000, 1037, 1099)] == [0, 1, 2, 1]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 300),
    st.lists(st.tuples(st.integers(0, 299), st.sampled_from([1, 2])), max_size=40),
    st.integers(0, 10**9),
)
def test_a_checkpoint_part_round_trips_aligned_and_writable(size, marks, lo):
    """Dense and sparse parts come back equal, with arrays the kernels take as they
    are (aligned, writable: numba would compile anew for others), in place over
    the decompressed bytes."""
    dense = code_arrays.new_codes(size)
    for i, code in marks:
        if i < size:
            code_arrays.set_code(dense, i, code)
    wins, losses, _ = (int(x) for x in code_arrays.count_codes(dense, size))
    d = Delta((6, 14), 11, lo, lo + size, dense=dense, wins=wins, losses=losses, evaluations=size)
    for part in (d, d.sparse()):
        back = decode_part(encode_part(part))
        assert (back.layer, back.round, back.lo, back.hi, back.wins, back.losses, back.evaluations) == (
            (6, 14),
            11,
            lo,
            lo + size,
            wins,
            losses,
            size,
        )
        assert back.decisions()[0].tolist() == d.decisions()[0].tolist()
        assert back.decisions()[1].tolist() == d.decisions()[1].tolist()
        for array in (back.dense, back.ranks, back.values):
            if array is not None:
                assert array.flags.aligned and array.flags.writeable and array.flags.c_contiguous


def test_a_checkpoint_part_of_the_earlier_layout_is_read():
    """Parts written by np.save after an unpadded JSON line (before this version)
    still read: a solve resumed across the upgrade keeps its rounds."""
    import io
    import json

    import zstandard

    buf = io.BytesIO()
    meta = {
        "layer": [2, 4],
        "round": 5,
        "lo": 10,
        "hi": 20,
        "wins": 1,
        "losses": 1,
        "evaluations": 3,
        "kind": "sparse",
    }
    buf.write(json.dumps(meta).encode() + b"\n")
    np.save(buf, np.array([11, 17], np.int64))
    np.save(buf, np.array([1, 2], np.uint8))
    back = decode_part(zstandard.ZstdCompressor(level=3).compress(buf.getvalue()))
    assert back.ranks.tolist() == [11, 17] and back.values.tolist() == [1, 2] and back.ranks.flags.aligned
    dense = code_arrays.new_codes(40)
    code_arrays.set_code(dense, 3, 2)
    buf = io.BytesIO()
    buf.write(json.dumps({**meta, "kind": "dense", "lo": 0, "hi": 40, "wins": 0}).encode() + b"\n")
    np.save(buf, dense)
    back = decode_part(zstandard.ZstdCompressor(level=3).compress(buf.getvalue()))
    assert back.dense.tolist() == dense.tolist() and back.dense.flags.aligned


@pytest.mark.parametrize("method", [COUNTING, FRONTIER])
@pytest.mark.parametrize("stones,pits", [(12, 3), (10, 5), (14, 2)])
def test_distance_tables_equal_bruteforce(stones, pits, method):
    variant = Variant(stones, pits)
    values, distance = bf.solve(stones, pits, with_distance=True)
    codes = {}
    top = 2 * (variant.win_kazan - 2)
    for m in range(top, -1, -2):
        for a in variant.kazans:
            b = m - a
            if a <= b and b in variant.kazans:
                result = solve_pair(variant, a, b, codes, method, with_dtz=True)
                codes.update(result.codes)
                for layer, dtz in result.dtz.items():
                    for board, _value in values[layer].items():
                        expected = distance[layer][board]
                        assert int(dtz[bf.rank(board)]) == (0 if expected is None else expected)
