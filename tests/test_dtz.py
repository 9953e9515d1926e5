"""Distance tables (--dtz): equal to a brute-force BFS and consistent move by move."""

import json

import bruteforce as bf
import numpy as np
import pytest
from test_solve_vs_bruteforce import assert_matches_bruteforce

from bestemshe_dist.data.blocks import read_layer_codes
from bestemshe_dist.data.layer_files import decode_distances
from bestemshe_dist.game import rules
from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.tasks import Job
from bestemshe_dist.solve import code_arrays


def read_dtz(folder, variant, k1, k2):
    entry = json.loads((folder / "manifest.json").read_text())["layers"][f"{k1}_{k2}"]
    data = (folder / f"layer_{k1}_{k2}_dtz.bin").read_bytes()
    assert entry["bytes"]["dtz"] == len(data)
    dtz = decode_distances(data, variant.layer_size(k1, k2), entry["dtz"]["bytes_per_position"], k1, k2)
    assert int(dtz.max()) == entry["dtz"]["max"]
    return dtz


@pytest.mark.parametrize("stones,pits,chunk_size", [(12, 3, 10**9), (12, 3, 200), (10, 4, 777)])
def test_dtz_files_equal_bruteforce_distances(client, tmp_path, stones, pits, chunk_size):
    variant = Variant(stones, pits)
    solve(client, Job(str(tmp_path), variant, dtz=True), make_plan(variant), chunk_size=chunk_size)
    assert_matches_bruteforce(tmp_path, stones, pits)
    _, distance = bf.solve(stones, pits, with_distance=True)
    for layer, table in distance.items():
        dtz = read_dtz(tmp_path, variant, *layer)
        for board, d in table.items():
            assert int(dtz[bf.rank(board)]) == (d or 0), (layer, board)


def test_dtz_is_consistent_move_by_move_on_the_50_stone_endgame(client, tmp_path):
    """A WIN at d has a winning exit (d = 1) or a quiet move to a LOSS at d - 1; a LOSS
    at d > 0 has only moves to WINs (or losing exits) at <= d - 1, one of them at d - 1."""
    variant = Variant(50, 5)
    solve(client, Job(str(tmp_path), variant, dtz=True), make_plan(variant, 42))
    codes = {l: (tmp_path / f"layer_{l[0]}_{l[1]}_win.bin") for l in make_plan(variant, 42).layers}
    from bestemshe_dist.data.store import Store

    store = Store(str(tmp_path))
    values = {l: read_layer_codes(store, variant, *l) for l in codes}
    dtzs = {l: read_dtz(tmp_path, variant, *l) for l in codes}
    checked = 0
    for (k1, k2), table in values.items():
        stones = variant.board_stones(k1, k2)
        board = np.zeros(10, np.int64)
        rules.unrank(0, stones, variant.binom, board)
        for x in range(variant.layer_size(k1, k2)):
            value, d = int(code_arrays.get_code(table, x)), int(dtzs[(k1, k2)][x])
            children = []  # (is exit, child value, child distance)
            for pit in range(5):
                moved = rules.play(variant, k1, k2, board, pit)
                if moved is None:
                    continue
                if moved[0] == "win":
                    children.append((True, code_arrays.LOSS, 0))
                    continue
                c1, c2, child = moved[1]
                cx = rules.rank(child, variant.binom)
                cv = int(code_arrays.get_code(values[(c1, c2)], cx))
                children.append((moved[2] > 0, cv, 0 if moved[2] > 0 else int(dtzs[(c1, c2)][cx])))
            if value == code_arrays.WIN:
                assert any(
                    cv == code_arrays.LOSS and (cd == d - 1 if not ex else d == 1) for ex, cv, cd in children
                ), (k1, k2, x)
            elif value == code_arrays.LOSS:
                if not children:
                    assert d == 0
                else:
                    assert all(cv == code_arrays.WIN for _, cv, _ in children)
                    steps = [1 if ex else cd + 1 for ex, _, cd in children]
                    assert max(steps) == d, (k1, k2, x)
            else:
                assert d == 0
            checked += 1
            rules.successor(board)
    assert checked == make_plan(variant, 42).positions
