"""Counting retrograde (solve/counting.py, run/hostcount.py): 3-bit states that
round-trip, and the memory model that gives a pair the frontier method where
its states do not fit a host."""

import itertools
import logging
import re

import numpy as np
import pytest
from conftest import FIXTURE_M40
from distributed import Client, LocalCluster
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from bestemshe_dist.data.checkpoint import decode_part
from bestemshe_dist.game.dag import make_plan, pair_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run import driver as run
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.memory import choose_method, pair_memory
from bestemshe_dist.run.tasks import Job
from bestemshe_dist.solve import code_arrays, counting, kernels
from bestemshe_dist.solve.pair import COUNTING, FRONTIER, Delta


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 7), min_size=1, max_size=200), st.data())
def test_states_put_and_get_round_trip(values, data):
    """Each 3-bit state reads back as written, plain or indivisibly, and writing
    one never touches its neighbours (21 to a word, across word edges)."""
    states = counting.new_states(len(values))
    assert states.shape[0] == -(-len(values) // 21)
    for x, v in enumerate(values):
        if data.draw(st.booleans()):
            counting.put_state_shared(states, x, v)
        else:
            counting.put_state(states, x, v)
    assert [int(counting.get_state(states, x)) for x in range(len(values))] == values
    assert int(states[-1] >> np.uint64(63)) == 0  # the 64th bit of a word is never used


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 2, 3, 5, 7]), min_size=1, max_size=300), st.integers(0, 40))
def test_states_to_codes_and_marks_round_trip(values, lo):
    """states -> 2-bit codes keeps WIN and LOSS and makes every undecided state 0;
    marking those codes (dense, or sparse) into fresh states gives them back."""
    states = counting.new_states(lo + len(values))
    for x, v in enumerate(values):
        counting.put_state(states, lo + x, v)
    codes = code_arrays.new_codes(len(values))
    wins, losses = counting.states_to_codes(states, lo, len(values), codes)
    assert (wins, losses) == (values.count(1), values.count(2))
    expected = [v if v in (1, 2) else 0 for v in values]
    assert [int(code_arrays.get_code(codes, i)) for i in range(len(values))] == expected
    delta = Delta((0, 0), 0, lo, lo + len(values), dense=codes, wins=wins, losses=losses)
    for made in (delta, delta.sparse()):
        back = counting.new_states(lo + len(values))
        assert counting.mark(back, made) == wins + losses
        assert [int(counting.get_state(back, lo + i)) for i in range(len(values))] == expected


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=8))
def test_decided_bits_and_the_bit_scan_find_every_win_and_loss(words):
    """_next_decided (decided_bits, trailing_zeros) returns the WIN and LOSS codes
    of a range in rank order, and nothing else."""
    fresh = np.array(words, np.uint64)
    npos = 32 * len(words)
    codes = [(int(words[i >> 5]) >> (2 * (i & 31))) & 3 for i in range(npos)]
    for lo, hi in ((0, npos), (5, npos - 3), (33, 34)):
        want = [(i, c) for i, c in enumerate(codes) if lo <= i < hi and c in (1, 2)]
        assert _decided_list(fresh, lo, hi) == want


@njit
def _decided_list(fresh, lo, hi):
    out = []
    w, bits = (lo >> 5) - 1, np.uint64(0)
    while True:
        x, code, w, bits = counting._next_decided(fresh, 0, lo, hi, w, bits)
        if x < 0:
            return out
        out.append((x, int(code)))


@pytest.mark.parametrize(
    "stones,pits,k1,k2,cuts", [(12, 3, 0, 2, (0, 5, 21, 100)), (16, 4, 2, 2, (7, 64, 300))]
)
def test_first_round_blocks_equal_the_position_by_position_count(stones, pits, k1, k2, cuts):
    """Round 0 (first_range: blocks of moves, then captures, then whole words) sets
    the states recount_range sets position by position when nothing is decided
    yet, with ranges cut inside state words and run on two threads at once."""
    from bestemshe_dist.run.hostcount import in_threads

    variant = Variant(stones, pits)
    pair = pair_plan(variant, min(k1, k2), max(k1, k2))
    deps = _solved_before(variant, pair)
    state = counting.CountingState(variant, pair.a, pair.b, deps)
    layer, size = (k1, k2), state.size
    edges = sorted({0, size, *(c for c in cuts if c < size)})
    ranges = list(itertools.pairwise(edges))
    deltas = in_threads(2, ranges, lambda r: state.first_round(layer, *r))
    blocked = state.states[layer].copy()
    # Each position by itself, every paired position undecided (a pair of one
    # layer is its own partner: its partner's states are a separate empty array).
    alone, undecided = counting.new_states(size), counting.new_states(size)
    for lo, hi in ranges:
        args = (pits, variant.win_kazan, k1, state.stones, lo, hi, alone, undecided, *state.deps[layer])
        kernels.call_specialized(counting.recount_range, (*args, variant.binom))
    assert (blocked == alone).all()
    for (lo, hi), delta in zip(ranges, deltas, strict=True):
        codes, wins, losses = state.codes_of(layer, lo, hi)
        assert (delta.dense == codes).all() and (delta.wins, delta.losses) == (wins, losses)


def _solved_before(variant, pair):
    """The codes of every layer solved before `pair` (the frontier method, which
    test_pair_rounds checks against brute force)."""
    from bestemshe_dist.solve.pair import solve_pair

    codes = {}
    for p in make_plan(variant).pairs:
        if p.key == pair.key:
            return codes
        codes.update(solve_pair(variant, p.a, p.b, codes, FRONTIER).codes)
    raise AssertionError(pair.key)


def test_memory_model_gives_frontier_where_counting_does_not_fit():
    """Counting needs 3 bits a position of each layer, frontier 2: on a host with
    room for the one and not the other, the pair gets frontier."""
    variant = Variant(50, 5)
    pair = pair_plan(variant, 0, 2)
    count = pair_memory(variant, pair, 1 << 26, 2, 1, method=COUNTING)
    frontier = pair_memory(variant, pair, 1 << 26, 2, 1, method=FRONTIER)
    extra = count.pair - frontier.pair
    # 1 bit more a position of each layer, in 21-state words against 32-code words
    assert extra == 2 * (counting.state_bytes(pair.layer_size) - 8 * -(-pair.layer_size // 32))
    assert 0.99 < extra * 8 / (2 * pair.layer_size) / (64 / 21 - 2) < 1.01
    assert choose_method(variant, pair, 1 << 26, 2, 1, count.total) == COUNTING
    assert choose_method(variant, pair, 1 << 26, 2, 1, count.total - 1) == FRONTIER
    assert (
        choose_method(variant, pair, 1 << 26, 2, 1, count.total, room=count.pair + count.deps - 1) == FRONTIER
    )
    # The largest pair by counting fits this machine class (24 GiB).
    assert count.total < 20 * 2**30


def test_a_solve_on_a_host_too_small_for_counting_uses_frontier(client, tmp_path, monkeypatch):
    """Hosts whose budget lies between the two needs: the driver gives the large
    pair the frontier method, says so in its rounds, and the files are the
    published ones."""
    variant = Variant(50, 5)
    plan = make_plan(variant, 40)
    real_hosts = run.Driver.hosts

    def need(pair, h, method):
        return pair_memory(variant, pair, 20_000, h["threads"], h["processes"], method=method).total

    def small_hosts(self):
        hosts = real_hosts(self)
        for h in hosts.values():
            h["budget"] = max(need(p, h, FRONTIER) for p in plan.pairs)  # every pair fits by frontier
        return hosts

    h = next(iter(real_hosts(run.Driver(client, Job(str(tmp_path), variant), plan, print, 20_000)).values()))
    budget = max(need(p, h, FRONTIER) for p in plan.pairs)
    large = next(p for p in plan.pairs if need(p, h, FRONTIER) == budget)
    assert need(large, h, COUNTING) > budget  # ... and the largest not by counting

    monkeypatch.setattr(run.Driver, "hosts", small_hosts)
    lines = []
    solve(client, Job(str(tmp_path), variant, method=COUNTING), plan, lines.append, chunk_size=20_000)
    assert any(f"{large.key} round 3 (frontier" in line for line in lines), lines
    assert any("round 3 (counting" in line for line in lines), lines  # smaller pairs still count
    for path in FIXTURE_M40.glob("*.bin"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


@pytest.mark.parametrize("rounds", [1, 5])
def test_a_counting_solve_stopped_after_rounds_resumes_to_the_published_files(client, tmp_path, rounds):
    """--stop-after-rounds ends the counting pairs after round 0 or 4 (and holds
    back the pairs that need them); the same solve again rebuilds their states on
    a host from the checkpoints, says so, and ends with the published files."""
    variant = Variant(50, 5)
    plan = make_plan(variant, 40)
    first, second = [], []
    job = Job(str(tmp_path), variant, method=COUNTING)
    solve(client, job, plan, first.append, chunk_size=20_000, stop_after_rounds=rounds)
    stopped = "1 round" if rounds == 1 else f"{rounds} rounds"
    assert any(f"pair-18-24: stopped after {stopped}" in line for line in first), first
    assert any("not started (" in line for line in first), first  # pair-16-24 needs a stopped pair
    assert not any(path.name.startswith("layer_16_24") for path in tmp_path.glob("*.bin"))
    solve(client, job, plan, second.append, chunk_size=20_000)
    assert any(f"pair-18-24: resuming after round {rounds - 1}" in line for line in second), second
    assert any(
        re.search(
            rf"pair-18-24: its states rebuilt on \S+ from the checkpoints of rounds 0-{rounds - 1} "
            r"in [0-9.]+s \(this host held none of its states\)$",
            line,
        )
        for line in second
    ), second
    for path in FIXTURE_M40.glob("*.bin"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def _decisions(store, names):
    """{(layer, rank): code} of the checkpoint parts `names`."""
    found = {}
    for name in names:
        delta = decode_part(store.read_bytes(name))
        ranks, values = delta.decisions()
        found.update({(tuple(delta.layer), int(r)): int(v) for r, v in zip(ranks, values, strict=True)})
    return found


@pytest.mark.parametrize("threads,log", [(1, 4), (2, 1 << 16), (2, 4)])
def test_a_counting_round_run_again_after_its_try_died_writes_the_same_parts(
    tmp_path, monkeypatch, threads, log
):
    """Round 4 of a counting pair as one task on a fresh host (its states rebuilt
    from rounds 0-3), on 1 or 2 threads, its parts written from the walks' logs
    of decisions or (logs too small) from a scan of the round array: the same
    decisions as the frontier method's round 4. A try that died half way
    (states garbled, the host's mark not complete) is run again: it rebuilds
    and writes the same parts; so is a try that raised. Each rebuild says why."""
    from bestemshe_dist.run import hostcount

    monkeypatch.setattr(hostcount, "LOG_POSITIONS", log)
    from bestemshe_dist.data.store import completed_rounds
    from bestemshe_dist.game.dag import single_pair_plan
    from bestemshe_dist.run import hostmem
    from bestemshe_dist.run.hostcount import forget_all_counting, host_counting
    from bestemshe_dist.run.tasks import count_round_task

    variant = Variant(50, 5)
    plan = single_pair_plan(variant, 10, 24)
    pair = plan.pairs[0]
    chunk = 1 << 18
    outs = {m: tmp_path / m for m in (COUNTING, FRONTIER)}
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
        for method, out in outs.items():
            job = Job(str(out), variant, method=method, synthetic=2)
            solve(local, job, plan, chunk_size=chunk, stop_after_rounds=4 + (method == FRONTIER))
    job = Job(
        str(outs[COUNTING]), variant, method=COUNTING, synthetic=2, space=f"test-count-round-{threads}-{log}"
    )
    store = job.store()
    sources = completed_rounds(store, pair.key)[3]["parts"]
    frontier_store = Job(str(outs[FRONTIER]), variant).store()
    try:
        clean = count_round_task(job, pair, {}, "s", 4, chunk, sources, threads)
        assert clean["rebuilt"] is not None  # a fresh host: rebuilt from the checkpoints
        assert clean["rebuilt_why"] == "this host held none of its states"
        assert clean["parts"] and sum(clean["parts"].values()) == clean["wins"] + clean["losses"]
        decided = _decisions(store, clean["parts"])
        assert decided == _decisions(frontier_store, completed_rounds(frontier_store, pair.key)[4]["parts"])
        # a try of round 4 that died half way: some states taken down, the mark open
        host = host_counting(job, pair, {}, job.dep_source)
        for layer in pair.layers:
            for x in range(0, pair.layer_size, 997):
                counting.put_state(host.state.states[layer], x, counting.WIN)
        host.note(4, False)
        again = count_round_task(job, pair, {}, "s", 4, chunk, sources, threads)
        assert again["rebuilt"] is not None
        assert again["rebuilt_why"] == "a try of round 4 stopped before its end"
        assert again["parts"] == clean["parts"]
        assert _decisions(store, again["parts"]) == decided

        # a try that raised part way through its walks (Dask would run it again)
        def unreadable(data):
            raise OSError("the store went away\nsecond line")

        readable = hostcount.decode_part
        monkeypatch.setattr(hostcount, "decode_part", unreadable)
        with pytest.raises(OSError, match="the store went away"):
            count_round_task(job, pair, {}, "s", 4, chunk, sources, threads)
        monkeypatch.setattr(hostcount, "decode_part", readable)
        third = count_round_task(job, pair, {}, "s", 4, chunk, sources, threads)
        assert third["rebuilt_why"] == "a try of round 4 failed: OSError: the store went away"
        assert third["parts"] == clean["parts"]
        assert _decisions(store, third["parts"]) == decided
        # complete after round 4 now: round 5 goes on without a rebuild
        assert host.complete_after() == 4
    finally:
        forget_all_counting(job.space)
        hostmem.space(job.space).remove()
