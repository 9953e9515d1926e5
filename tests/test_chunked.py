"""Large pairs as rounds of chunk tasks: the same files as whole-pair solving
(and as the brute force), for many chunk sizes, including ones that divide
nothing and ones of a few hundred positions (many rounds, many chunks)."""

import itertools
import logging
import re

import pytest
from conftest import FIXTURE_M40
from distributed import Client, LocalCluster
from test_solve_vs_bruteforce import assert_matches_bruteforce

from bestemshe_dist.data.checkpoint import decode_part
from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run import driver as run
from bestemshe_dist.run.driver import frontier_pieces, solve
from bestemshe_dist.run.tasks import Job
from bestemshe_dist.solve import code_arrays, counting


@pytest.mark.parametrize(
    "stones,pits,chunk_size,method",
    [
        (12, 3, 100, "frontier"),
        (12, 3, 333, "sweep"),
        (12, 3, 1001, "frontier"),
        (10, 5, 7777, "frontier"),
        (14, 2, 257, "frontier"),
        (14, 1, 3, "sweep"),
        (8, 4, 64, "frontier"),
        (12, 3, 100, "counting"),
        (10, 5, 7777, "counting"),
        (14, 1, 3, "counting"),
        (8, 4, 64, "counting"),
        (10, 5, 7777, "counting, sorted walks"),
        (12, 3, 100, "counting, sorted walks"),
    ],
)
def test_chunked_equals_bruteforce(client, tmp_path, monkeypatch, stones, pits, chunk_size, method):
    # frontier chunks split into pieces at this size too
    monkeypatch.setattr(run, "MIN_PIECE", 8)
    monkeypatch.setattr(run, "MIN_PIECE_SOURCES", 2)
    if method == "counting, sorted walks":
        # every walk's predecessors sorted by rank before their updates, as on a
        # large layer, in batches that fill many times a walk
        monkeypatch.setattr(counting, "SORT_ABOVE_BYTES", -1)
        monkeypatch.setattr(counting, "SORT_BATCH", 64)
        method = "counting"
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
    found = [re.search(r"round \d+ \(frontier, (\d+) chunks?, (\d+) tasks?\)", line) for line in lines]
    return [m.group(0) for m in found if m and int(m.group(2)) > int(m.group(1))]


@pytest.mark.parametrize("method", ["frontier", "counting"])
def test_chunked_50_stone_endgame_equals_published(client, tmp_path, monkeypatch, method):
    monkeypatch.setattr(run, "MIN_PIECE", 1000)
    monkeypatch.setattr(run, "MIN_PIECE_SOURCES", 100)
    variant = Variant(50, 5)
    lines = []
    job = Job(str(tmp_path), variant, method=method)
    solve(client, job, make_plan(variant, 40), lines.append, chunk_size=20_000)
    assert any("pair-16-24 round" in line for line in lines)  # 92,378 positions: 5 chunks a layer
    if method == "frontier":
        assert split_rounds(lines)
    else:
        assert any(re.search(r"pair-16-24 round 9 \(counting, 10 chunks, 1 task\)", line) for line in lines)
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
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=2,
            processes=False,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        assert run.space_name(client, "solve-x") == "solve-x-private"
        solve(
            client,
            Job(str(tmp_path), variant, method="frontier"),
            make_plan(variant, 40),
            lines.append,
            chunk_size=20_000,
        )
    assert any("pair-16-24 round 3 (frontier" in line for line in lines)
    for path in FIXTURE_M40.glob("*.bin"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


@pytest.mark.parametrize("small", [False, True])
def test_frontier_rounds_in_one_task_or_spread_give_the_published_files(client, tmp_path, monkeypatch, small):
    """Every frontier round as one task (run.is_small_round always true), or none:
    the files equal the published ones either way."""
    monkeypatch.setattr(run, "is_small_round", lambda sources, chunk_size: small)
    variant = Variant(50, 5)
    lines = []
    job = Job(str(tmp_path), variant, method="frontier")
    solve(client, job, make_plan(variant, 40), lines.append, chunk_size=20_000)
    frontier = [l for l in lines if "pair-16-24 round" in l and "(frontier" in l]
    tasks = [int(re.search(r"(\d+) tasks?\)", line).group(1)) for line in frontier]
    assert tasks and (set(tasks) == {1} if small else max(tasks) > 1), frontier
    # the pair's time by phase, summed from its round markers
    published = next(l for l in lines if l.startswith("pair-16-24: publishing after"))
    phases = dict(
        item.rsplit(" ", 1)
        for item in re.search(r"its tasks' time: (.*) s; waited on flushes", published).group(1).split(", ")
    )
    assert {"kernel", "sync", "flush" if small else "sources"} <= set(phases), published
    assert all(float(v) >= 0 for v in phases.values()) and float(phases["kernel"]) > 0, published
    for path in FIXTURE_M40.glob("*.bin"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_frontier_rounds_in_one_task_equal_bruteforce(client, tmp_path, monkeypatch):
    monkeypatch.setattr(run, "is_small_round", lambda sources, chunk_size: True)
    variant = Variant(12, 3)
    solve(client, Job(str(tmp_path), variant, method="frontier"), make_plan(variant), chunk_size=100)
    assert assert_matches_bruteforce(tmp_path, 12, 3) == len(variant.layers)


def test_a_small_round_tried_again_after_a_death_writes_the_same_parts(tmp_path):
    """A one-task round that died part-way leaves decisions in the host's round
    array (it outlives the worker process); the next try of the round on that host
    empties it first, or the dead try's decisions of one layer would be taken as
    the other's. Its parts hold the same decisions as a clean try's."""
    from bestemshe_dist.data.store import completed_rounds
    from bestemshe_dist.game.dag import single_pair_plan
    from bestemshe_dist.run import hostmem
    from bestemshe_dist.run.hostpair import host_pair
    from bestemshe_dist.run.tasks import small_round_task

    variant = Variant(50, 5)
    plan = single_pair_plan(variant, 10, 24)
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as local,
    ):
        solve(local, Job(str(tmp_path), variant, synthetic=2), plan, chunk_size=1 << 18, stop_after_rounds=4)
    pair = plan.pairs[0]
    job = Job(str(tmp_path), variant, synthetic=2, space="test-small-round")
    store = job.store()
    sources = completed_rounds(store, pair.key)[3]["parts"]
    try:
        clean = small_round_task(job, pair, {}, "s", 4, 1 << 18, sources)
        decided = {name: decode_part(store.read_bytes(name)).decisions() for name in clean["parts"]}
        assert clean["parts"] and sum(clean["parts"].values()) == clean["wins"] + clean["losses"]
        # a try that died after deciding positions of the second layer, in the round array
        state = host_pair(job, pair, {}, job.dep_source).state
        for x in range(0, pair.layer_size, 997):
            code_arrays.set_code(state.found[pair.layers[1]], x, code_arrays.WIN)
        again = small_round_task(job, pair, {}, "s", 4, 1 << 18, sources)
        assert again["parts"] == clean["parts"]
        for name, (ranks, values) in decided.items():
            got = decode_part(store.read_bytes(name)).decisions()
            assert got[0].tolist() == ranks.tolist() and got[1].tolist() == values.tolist(), name
    finally:
        from bestemshe_dist.run.hostpair import forget_all

        forget_all(job.space)
        hostmem.space(job.space).remove()


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
    assert all(b1 == a2 for (_, b1), (a2, _) in itertools.pairwise(edges))
    assert [number for number, _, _ in by_chunk[0]] == list(range(7))
    assert min(b - a for a, b in edges) >= run.MIN_PIECE
    # decisions per part unknown (checkpoints of an older version): a task per chunk
    assert [piece for *_, piece in frontier_pieces(chunks, {}, threads=2)] == [None, None, None]
    # a tail round: one source, in one task
    assert [piece for *_, piece in frontier_pieces(chunks[:1], {(layer, 0): 1}, threads=2)] == [None]
