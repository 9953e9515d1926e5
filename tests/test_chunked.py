"""Large pairs as rounds of chunk tasks: the same files as whole-pair solving
(and as the brute force), for many chunk sizes, including ones that divide
nothing and ones of a few hundred positions (many rounds, many chunks)."""
import re

import pytest

from bestemshe_dist import run
from bestemshe_dist.plan import make_plan
from bestemshe_dist.run import frontier_pieces, solve
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
def test_chunked_equals_bruteforce(client, tmp_path, monkeypatch, stones, pits, chunk_size, method):
    # frontier chunks split into pieces at this size too
    monkeypatch.setattr(run, "MIN_PIECE", 8)
    monkeypatch.setattr(run, "MIN_PIECE_SOURCES", 2)
    variant = Variant(stones, pits)
    lines = []
    job = Job(str(tmp_path), variant, method=method)
    solve(client, job, make_plan(variant), lines.append, chunk_size=chunk_size)
    assert any(" round 3 (" in line for line in lines)  # chunked rounds really ran
    if method == "frontier" and chunk_size >= 100:
        assert split_rounds(lines), lines  # some chunk's sources were split into pieces
    assert assert_matches_bruteforce(tmp_path, stones, pits) == len(variant.layers)
    # Checkpoints of published pairs are cleaned up.
    assert not list((tmp_path / ".bestemshe" / "pairs").glob("pair-*"))


def split_rounds(lines) -> list:
    """The frontier rounds of a solve's log that ran more tasks than chunks."""
    found = [re.search(r"round \d+ \(frontier, (\d+) chunks, (\d+) tasks\)", line) for line in lines]
    return [m.group(0) for m in found if m and int(m.group(2)) > int(m.group(1))]


def test_chunked_50_stone_endgame_equals_published(client, tmp_path, monkeypatch):
    monkeypatch.setattr(run, "MIN_PIECE", 1000)
    monkeypatch.setattr(run, "MIN_PIECE_SOURCES", 100)
    variant = Variant(50, 5)
    lines = []
    solve(client, Job(str(tmp_path), variant), make_plan(variant, 40), lines.append, chunk_size=20_000)
    assert any("pair-16-24 round" in line for line in lines)  # 92,378 positions: 5 chunks a layer
    assert split_rounds(lines)
    for path in FIXTURE_M40.glob("*.bin"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_one_worker_process_with_threads_solves_in_private_memory(tmp_path, monkeypatch):
    """A cluster of one worker process (two threads) gets a private host space
    (hostmem.py): the pair's arrays in the process's own memory, round decisions
    flushed per worker. The files equal the published ones."""
    import logging

    from distributed import Client, LocalCluster

    monkeypatch.setattr(run, "MIN_PIECE", 1000)
    monkeypatch.setattr(run, "MIN_PIECE_SOURCES", 100)
    variant = Variant(50, 5)
    lines = []
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        assert run.space_name(client, "solve-x") == "solve-x-private"
        solve(client, Job(str(tmp_path), variant), make_plan(variant, 40), lines.append, chunk_size=20_000)
    assert any("pair-16-24 round 3 (frontier" in line for line in lines)
    for path in FIXTURE_M40.glob("*.bin"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_frontier_pieces_follow_the_sources():
    """A frontier half's tasks: chunks without sources have none, the others are
    split in proportion to their sources (about PIECES_PER_THREAD per thread), the
    pieces of a chunk tile it, none is under MIN_PIECE positions, and a tail
    round's few sources stay whole (MIN_PIECE_SOURCES)."""
    layer = (0, 2)
    chunks = [(layer, 0, 0, 1 << 20), (layer, 1, 1 << 20, 2 << 20), (layer, 2, 2 << 20, (2 << 20) + 5000)]
    k = run.MIN_PIECE_SOURCES
    sources = {(layer, 0): 9 * k, (layer, 1): k, (layer, 2): k}
    tasks = frontier_pieces(chunks, sources, threads=2)
    by_chunk = {}
    for got_layer, c, lo, hi, piece in tasks:
        assert got_layer == layer and (lo, hi) == chunks[c][2:]
        by_chunk.setdefault(c, []).append(piece)
    assert len(by_chunk[0]) == 7 and len(by_chunk[1]) == 1 and by_chunk[2] == [None]
    assert by_chunk[1] == [None]
    edges = [(a, b) for _, a, b in by_chunk[0]]
    assert edges[0][0] == 0 and edges[-1][1] == 1 << 20
    assert all(b1 == a2 for (_, b1), (a2, _) in zip(edges, edges[1:]))
    assert [number for number, _, _ in by_chunk[0]] == list(range(7))
    assert min(b - a for a, b in edges) >= run.MIN_PIECE
    # decisions per part unknown (checkpoints of an older version): a task per chunk
    assert [piece for *_, piece in frontier_pieces(chunks, {}, threads=2)] == [None, None, None]
    # a tail round: one source, in one task
    assert [piece for *_, piece in frontier_pieces(chunks[:1], {(layer, 0): 1}, threads=2)] == [None]
