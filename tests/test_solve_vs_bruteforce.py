"""The package's tablebase equals the independent brute-force solver, bit for bit,
on every layer of many small variants (solved through the real Dask path)."""

import json

import bruteforce as bf
import pytest
from conftest import run_cli

from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.tasks import Job

VARIANTS = (
    [(s, 1) for s in range(2, 15, 2)]
    + [(s, 2) for s in range(2, 13, 2)]
    + [(s, 3) for s in range(2, 13, 2)]
    + [(4, 4), (6, 4), (8, 4)]
    + [(6, 5), (8, 5), (10, 5)]
)


def assert_matches_bruteforce(folder, stones, pits, min_captured=0):
    values = bf.solve(stones, pits)
    expected = bf.layer_bitsets(stones, pits, values)
    checked = 0
    for (k1, k2), (win, draw) in expected.items():
        if k1 + k2 < min_captured:
            continue
        n = bf.layer_size(stones, pits, k1, k2)
        for kind, bits in (("win", win), ("draw", draw)):
            got = bf.read_layer_file(folder / f"layer_{k1}_{k2}_{kind}.bin", n)
            assert got == bits, f"layer {k1}_{k2} {kind} differs from the brute force"
        checked += 1
    return checked


@pytest.mark.parametrize("stones,pits", VARIANTS)
def test_every_layer_equals_bruteforce(client, tmp_path, stones, pits):
    variant = Variant(stones, pits)
    plan = make_plan(variant)
    summary = solve(client, Job(str(tmp_path), variant), plan)
    assert summary.layers_solved == len(variant.layers)
    assert assert_matches_bruteforce(tmp_path, stones, pits) == len(variant.layers)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["variant"] == {"stones": stones, "pits": pits}
    assert len(manifest["layers"]) == len(variant.layers)


def test_min_captured_solves_only_the_endgame(client, tmp_path):
    variant = Variant(12, 3)
    solve(client, Job(str(tmp_path), variant), make_plan(variant, 6))
    names = sorted(p.name for p in tmp_path.glob("layer_*.bin"))
    expected = sorted(
        f"layer_{k1}_{k2}_{kind}.bin" for k1, k2 in variant.layers if k1 + k2 >= 6 for kind in ("win", "draw")
    )
    assert names == expected
    assert_matches_bruteforce(tmp_path, 12, 3, min_captured=6)


def test_cli_solve_on_two_worker_processes_equals_bruteforce(tmp_path):
    out = tmp_path / "tb"
    done = run_cli("solve", "--stones", 10, "--pits", 3, "--out", out, "--workers", 2)
    assert done.returncode == 0, done.stderr
    assert "done: 9 layers solved" in done.stderr
    assert assert_matches_bruteforce(out, 10, 3) == 9
    # A second run finds every layer published and solves nothing.
    again = run_cli("solve", "--stones", 10, "--pits", 3, "--out", out, "--workers", 1)
    assert again.returncode == 0, again.stderr
    assert "9 layers already published" in again.stderr
    assert "done: 0 layers solved, 9 skipped" in again.stderr
