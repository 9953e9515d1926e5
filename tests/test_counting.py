"""Counting retrograde (solve/counting.py, run/hostcount.py): 3-bit states that
round-trip, and the memory model that gives a pair the frontier method where
its states do not fit a host."""

import numpy as np
from conftest import FIXTURE_M40
from hypothesis import given, settings
from hypothesis import strategies as st

from bestemshe_dist.game.dag import make_plan, pair_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run import driver as run
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.memory import choose_method, pair_memory
from bestemshe_dist.run.tasks import Job
from bestemshe_dist.solve import code_arrays, counting
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
