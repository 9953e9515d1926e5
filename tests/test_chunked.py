"""Large pairs as rounds of chunk tasks: the same files as whole-pair solving
(and as the brute force), for many chunk sizes, including ones that divide
nothing and ones of a few hundred positions (many rounds, many chunks)."""
import pytest

from bestemshe_dist.plan import make_plan
from bestemshe_dist.run import solve
from bestemshe_dist.tasks import Job
from bestemshe_dist.variant import Variant
from conftest import FIXTURE_M40
from test_solve_vs_bruteforce import assert_matches_bruteforce


@pytest.mark.parametrize("stones,pits,chunk_size,method", [
    (12, 3, 100, "frontier"),
    (12, 3, 333, "sweep"),
    (12, 3, 1001, "frontier"),
    (10, 5, 7777, "frontier"),
    (14, 2, 257, "frontier"),
    (14, 1, 3, "sweep"),
    (8, 4, 64, "frontier"),
])
def test_chunked_equals_bruteforce(client, tmp_path, stones, pits, chunk_size, method):
    variant = Variant(stones, pits)
    lines = []
    job = Job(str(tmp_path), variant, method=method)
    solve(client, job, make_plan(variant), lines.append, chunk_size=chunk_size)
    assert any(" round 3 (" in line for line in lines)  # chunked rounds really ran
    assert assert_matches_bruteforce(tmp_path, stones, pits) == len(variant.layers)
    # Checkpoints of published pairs are cleaned up.
    assert not list((tmp_path / ".bestemshe" / "pairs").glob("pair-*"))


def test_chunked_50_stone_endgame_equals_published(client, tmp_path):
    variant = Variant(50, 5)
    lines = []
    solve(client, Job(str(tmp_path), variant), make_plan(variant, 40), lines.append, chunk_size=20_000)
    assert any("pair-16-24 round" in line for line in lines)  # 92,378 positions: 5 chunks a layer
    for path in FIXTURE_M40.glob("*.bin"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name
