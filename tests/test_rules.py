"""Property tests for bestemshe_dist.game.variant and bestemshe_dist.game.rules (SPEC.md).

The rank, the odometer order and the moves are checked against SPEC.md's formulas
and against the independent reference tests/bruteforce.py, which shares no code
with the package.
"""

from math import comb

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bestemshe_dist.errors import UsageError
from bestemshe_dist.game import rules
from bestemshe_dist.game.variant import MAX_STONES, Variant

try:  # works whether or not tests/ is a package
    from . import bruteforce as bf
except ImportError:
    import bruteforce as bf

# numba compiles on first call (or loads its cache): no per-example deadline.
PROPS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALID = [(s, p) for s in range(2, MAX_STONES + 1, 2) for p in range(1, 6)]


def _variant(stones, pits, _cache={}):
    """Variants are immutable; share them so binom is built once per variant."""
    key = (stones, pits)
    if key not in _cache:
        _cache[key] = Variant(stones, pits)
    return _cache[key]


def _board(v, k1, k2, x):
    board = np.zeros(v.board, dtype=np.int64)
    rules.unrank(x, v.board_stones(k1, k2), v.binom, board)
    return board


# --- Variant -----------------------------------------------------------------


def test_default_is_the_published_game():
    v = Variant()
    assert (v.stones, v.pits) == (50, 5)
    assert v.board == 10
    assert v.win_kazan == 26
    assert list(v.kazans) == list(range(0, 25, 2))
    assert len(v.layers) == 169
    assert v.layer_size(0, 0) == 12_565_671_261
    assert sum(v.layer_size(a, b) for a, b in v.layers) == 125_698_242_527


@pytest.mark.parametrize("stones,pits", VALID)
def test_variant_numbers(stones, pits):
    v = Variant(stones, pits)
    n = 2 * pits
    assert v.board == n
    # Smallest even number greater than stones / 2.
    wk = v.win_kazan
    assert wk % 2 == 0 and 2 * wk > stones and 2 * (wk - 2) <= stones
    assert wk == bf.win_kazan(stones)
    assert list(v.kazans) == list(range(0, wk - 1, 2)) == bf.kazans(stones)
    assert v.layers == bf.layers(stones, pits)
    for k1, k2 in v.layers:
        r = stones - k1 - k2
        assert r >= 0
        assert v.board_stones(k1, k2) == r
        assert v.layer_size(k1, k2) == comb(r + n - 1, n - 1) == bf.layer_size(stones, pits, k1, k2)
    b = v.binom
    assert b.dtype == np.int64
    # Large enough for every index the rank of any layer uses: i + p_i <= stones + n - 2.
    assert b.shape[0] >= stones + n - 1 and b.shape[1] >= n
    expected = np.array([[comb(x, k) for k in range(b.shape[1])] for x in range(b.shape[0])], dtype=object)
    assert (b.astype(object) == expected).all()


@pytest.mark.parametrize(
    "stones,pits",
    [
        (1, 5),
        (3, 5),
        (49, 5),
        (51, 2),
        (0, 5),
        (-2, 5),
        (64, 5),
        (100, 5),
        (MAX_STONES + 2, 1),
        (50, 0),
        (50, 6),
        (50, -1),
        (10, 0),
        (10, 6),
        (2.0, 5),
        (50, 5.0),
        ("50", 5),
    ],
)
def test_invalid_variants(stones, pits):
    with pytest.raises(UsageError):
        Variant(stones, pits)


def test_max_stones_is_62():
    assert MAX_STONES == 62
    Variant(62, 5)
    Variant(62, 1)


def test_check_layer():
    v = Variant(50, 5)
    v.check_layer(0, 0)
    v.check_layer(24, 24)
    for k1, k2 in [(26, 0), (0, 26), (1, 0), (0, 3), (-2, 0)]:
        with pytest.raises(UsageError):
            v.check_layer(k1, k2)


# --- rank / unrank / successor: whole small layers -----------------------------

# Whole layers walked in odometer order; small enough to keep Python-level calls cheap.
WHOLE_LAYER_VARIANTS = [(14, 1), (14, 2), (14, 3), (12, 4), (10, 5), (2, 5), (62, 1)]
WHOLE_LAYER_LIMIT = 30_000


def _whole_layers():
    out = []
    for stones, pits in WHOLE_LAYER_VARIANTS:
        v = Variant(stones, pits)
        for k1, k2 in v.layers:
            if v.layer_size(k1, k2) <= WHOLE_LAYER_LIMIT:
                out.append((stones, pits, k1, k2))
    return out


WHOLE_LAYERS = _whole_layers()


@pytest.mark.parametrize("stones,pits,k1,k2", WHOLE_LAYERS)
def test_whole_layer_odometer(stones, pits, k1, k2):
    v = _variant(stones, pits)
    n = v.board
    r = v.board_stones(k1, k2)
    size = v.layer_size(k1, k2)
    binom = v.binom

    walked = np.zeros((size, n), dtype=np.int64)
    board = np.zeros(n, dtype=np.int64)
    rules.unrank(0, r, binom, board)
    # Rank 0 has every stone in the last pit (all prefix sums below it are 0).
    assert board.tolist() == [0] * (n - 1) + [r]
    for x in range(size):
        walked[x] = board
        more = rules.successor(board)
        assert bool(more) == (x < size - 1), (x, size)
    # At the last rank successor leaves the board as it is: every stone in pit 0.
    assert board.tolist() == [r] + [0] * (n - 1)
    assert not rules.successor(board)
    assert board.tolist() == [r] + [0] * (n - 1)

    # The odometer visits exactly unrank(0), unrank(1), ...
    for x in range(size):
        b = np.full(n, -7, dtype=np.int64)  # unrank fills every pit
        rules.unrank(x, r, binom, b)
        assert (b == walked[x]).all(), (x, b, walked[x])
        assert rules.rank(b, binom) == x

    assert (walked >= 0).all()
    assert (walked.sum(axis=1) == r).all()
    # A bijection onto all compositions of r into n pits, ranked as SPEC (and the reference).
    tuples = [tuple(row) for row in walked.tolist()]
    assert len(set(tuples)) == size
    assert set(tuples) == set(bf.positions(stones, pits, k1, k2))
    assert [bf.rank(t) for t in tuples] == list(range(size))


def test_whole_layers_cover_every_pit_count():
    assert {p for _, p, _, _ in WHOLE_LAYERS} == {1, 2, 3, 4, 5}
    assert sum(_variant(s, p).layer_size(a, b) for s, p, a, b in WHOLE_LAYERS) > 50_000


def test_rank_hand_values():
    v = Variant(50, 5)
    b = v.binom
    start = np.full(10, 5, dtype=np.int64)
    assert rules.rank(start, b) == bf.rank(tuple(start))
    assert rules.rank(np.array([0] * 9 + [50], dtype=np.int64), b) == 0
    assert rules.rank(np.array([50] + [0] * 9, dtype=np.int64), b) == v.layer_size(0, 0) - 1
    # One stone in pit j of an otherwise empty board (r = 1).
    one = np.zeros(10, dtype=np.int64)
    for j in range(10):
        one[:] = 0
        one[j] = 1
        assert rules.rank(one, b) == 9 - j


# --- rank / unrank / successor: sampled layers of the 50-stone game --------------

V50 = Variant(50, 5)


@st.composite
def layer_and_rank(draw, variant=V50):
    k1 = draw(st.sampled_from(list(variant.kazans)))
    k2 = draw(st.sampled_from(list(variant.kazans)))
    size = variant.layer_size(k1, k2)
    x = draw(
        st.one_of(
            st.integers(0, size - 1),
            st.sampled_from(sorted({0, 1, size // 2, max(0, size - 2), size - 1})),
        )
    )
    return k1, k2, x


@settings(max_examples=1000, **PROPS)
@given(layer_and_rank())
def test_unrank_rank_50_stones(args):
    k1, k2, x = args
    v = V50
    r = v.board_stones(k1, k2)
    board = np.full(10, -1, dtype=np.int64)
    rules.unrank(x, r, v.binom, board)
    assert (board >= 0).all()
    assert int(board.sum()) == r
    assert rules.rank(board, v.binom) == x
    assert bf.rank(tuple(int(p) for p in board)) == x


@settings(max_examples=1000, **PROPS)
@given(layer_and_rank())
def test_successor_50_stones(args):
    k1, k2, x = args
    v = V50
    size = v.layer_size(k1, k2)
    board = _board(v, k1, k2, x)
    before = board.copy()
    more = rules.successor(board)
    if x + 1 < size:
        assert more
        assert (board == _board(v, k1, k2, x + 1)).all(), (x, before, board)
        assert rules.rank(board, v.binom) == x + 1
    else:
        assert not more
        assert (board == before).all()


@settings(max_examples=800, **PROPS)
@given(st.data())
def test_rank_of_arbitrary_board(data):
    """rank(board) of any board (not only from unrank) agrees with the SPEC formula,
    lies inside its layer, and unrank inverts it."""
    stones = data.draw(st.sampled_from(range(2, MAX_STONES + 1, 2)))
    pits = data.draw(st.integers(1, 5))
    v = _variant(stones, pits)
    r = data.draw(st.integers(0, stones))
    # r stones cut into n pits at random points.
    cuts = sorted(data.draw(st.lists(st.integers(0, r), min_size=v.board - 1, max_size=v.board - 1)))
    counts = np.diff([0] + cuts + [r]).astype(np.int64)
    assert counts.sum() == r and (counts >= 0).all()
    x = rules.rank(counts, v.binom)
    assert x == bf.rank(tuple(counts.tolist()))
    assert 0 <= x < comb(r + v.board - 1, v.board - 1)
    back = np.full(v.board, -1, dtype=np.int64)
    rules.unrank(x, r, v.binom, back)
    assert (back == counts).all()


# --- moves against the reference ------------------------------------------------


@st.composite
def position(draw, max_stones=50):
    pits = draw(st.integers(1, 5))
    stones = draw(st.sampled_from(range(2, max_stones + 1, 2)))
    v = _variant(stones, pits)
    k1 = draw(st.sampled_from(list(v.kazans)))
    k2 = draw(st.sampled_from(list(v.kazans)))
    size = v.layer_size(k1, k2)
    x = draw(st.integers(0, size - 1))
    return v, k1, k2, x


def _check_moves(v, k1, k2, board):
    """play and sow_and_capture on every pit of one position, against the reference."""
    stones, pits, n = v.stones, v.pits, v.board
    t = tuple(int(p) for p in board)
    before = board.copy()
    for i in range(pits):
        got = rules.play(v, k1, k2, board, i)
        assert (board == before).all(), "play changed its input"
        want = bf.move(stones, pits, k1, k2, t, i)

        after = np.full(n, -9, dtype=np.int64)
        outcome, captured = rules.sow_and_capture(board, i, pits, k1, v.win_kazan, after)
        assert (board == before).all(), "sow_and_capture changed its input"
        # The kernels' arithmetic move gives the same outcome, capture and child rank.
        fast = rules.move_rank(board, int(board[pits:].sum()), i, pits, k1, v.win_kazan, v.binom)
        assert fast[0] == outcome, (t, k1, i, fast, outcome)
        if outcome != rules.MOVE_EMPTY:
            assert fast[1] == captured, (t, k1, i, fast, captured)
        if outcome == rules.MOVE_ON:
            assert fast[2] == rules.rotated_rank(after, pits, v.binom), (t, k1, i, fast)

        if want is None:
            assert t[i] == 0
            assert got is None
            assert outcome == rules.MOVE_EMPTY
            continue
        assert got is not None, (t, i, want)
        assert got[0] == want[0], (t, k1, k2, i, got, want)
        assert captured == want[-1] == got[-1]
        assert captured >= 0 and captured % 2 == 0 and captured != 1
        # Stones are conserved by the move (capture included).
        assert (after >= 0).all()
        assert int(after.sum()) + captured == sum(t)

        if want[0] == "win":
            assert outcome == rules.MOVE_WIN
            assert k1 + captured >= v.win_kazan or not after[pits:].any()
            continue

        assert outcome == rules.MOVE_ON
        (wk1, wk2, wchild), (gk1, gk2, gchild) = want[1], got[1]
        assert (gk1, gk2) == (wk1, wk2) == (k2, k1 + captured)
        assert isinstance(gchild, np.ndarray) and gchild.dtype == np.int64
        assert tuple(int(p) for p in gchild) == wchild, (t, k1, k2, i, gchild, wchild)
        # The child is the after-board seen from the opponent, in a stored layer.
        assert (gchild == np.roll(after, -pits)).all()
        assert gk2 in v.kazans and gk1 in v.kazans
        assert int(gchild.sum()) + gk1 + gk2 == stones
        # The rank the kernels use for the child is the child's own rank in its layer.
        cr = rules.rank(gchild, v.binom)
        assert rules.rotated_rank(after, pits, v.binom) == cr
        assert cr == bf.rank(wchild)
        assert 0 <= cr < v.layer_size(gk1, gk2)
        # A move without capture stays in the paired layer.
        if captured == 0:
            assert (gk1, gk2) == (k2, k1)


@pytest.mark.parametrize("stones,pits", [(2, 1), (8, 1), (6, 2), (10, 2), (8, 3), (6, 4), (6, 5)])
def test_moves_match_reference_whole_layers(stones, pits):
    """Every position of every layer of small variants (all pit counts, laps included)."""
    v = _variant(stones, pits)
    for k1, k2 in v.layers:
        for x in range(v.layer_size(k1, k2)):
            _check_moves(v, k1, k2, _board(v, k1, k2, x))


@settings(max_examples=2000, **PROPS)
@given(position())
def test_moves_match_reference(args):
    v, k1, k2, x = args
    _check_moves(v, k1, k2, _board(v, k1, k2, x))


@settings(max_examples=800, **PROPS)
@given(st.data())
def test_moves_match_reference_sparse_boards(data):
    """Boards with few stones per pit: single-stone moves, empty pits, captures of 2."""
    pits = data.draw(st.integers(1, 5))
    stones = data.draw(st.sampled_from(range(2, 51, 2)))
    v = _variant(stones, pits)
    counts = data.draw(st.lists(st.integers(0, 3), min_size=v.board, max_size=v.board))
    r = sum(counts)
    # Put the captured rest in the kazans when it fits in a stored layer.
    rest = stones - r
    if rest < 0 or rest % 2:
        return
    ks = list(v.kazans)
    pairs = [(a, rest - a) for a in ks if rest - a in ks]
    if not pairs:
        return
    k1, k2 = data.draw(st.sampled_from(pairs))
    _check_moves(v, k1, k2, np.array(counts, dtype=np.int64))


@pytest.mark.parametrize("stones,pits", [(2, 1), (6, 1), (8, 2), (12, 2), (10, 3), (8, 4), (6, 5)])
def test_moves_match_reference_exhaustively(stones, pits):
    v = _variant(stones, pits)
    for k1, k2 in v.layers:
        board = _board(v, k1, k2, 0)
        more = True
        while more:
            _check_moves(v, k1, k2, board)
            more = rules.successor(board)


def test_move_hand_examples():
    v = Variant(50, 5)
    # Start position, pit 0: 5 stones -> one back into pit 0, then pits 1..4.
    start = np.full(10, 5, dtype=np.int64)
    kind, (k1, k2, child), captured = rules.play(v, 0, 0, start, 0)
    assert (kind, k1, k2, captured) == ("child", 0, 0, 0)
    assert child.tolist() == [5, 5, 5, 5, 5, 1, 6, 6, 6, 6]
    # Pit 4 with 5 stones ends in pit 8 (5 + 1 = 6 stones): a capture of 6.
    kind, (k1, k2, child), captured = rules.play(v, 0, 0, start, 4)
    assert (kind, k1, k2, captured) == ("child", 0, 6, 6)
    assert child.tolist() == [6, 6, 6, 0, 5, 5, 5, 5, 5, 1]
    # A single stone moves on to the next pit (10 stones: win_kazan 6).
    v10 = Variant(10, 5)
    b = np.array([1, 1, 0, 0, 1, 1, 0, 0, 0, 0], dtype=np.int64)
    # Last stone into pit 5 making 2: captured, the opponent row is empty: a win.
    assert rules.play(v10, 2, 4, b, 4) == ("win", 2)
    kind, (k1, k2, child), captured = rules.play(v10, 2, 4, b, 0)
    assert (kind, k1, k2, captured) == ("child", 4, 2, 0)
    assert child.tolist() == [1, 0, 0, 0, 0, 0, 2, 0, 0, 1]
    assert rules.play(v10, 2, 4, b, 2) is None
    # Kazan reaches 26: a win even though the opponent keeps stones.
    b = np.array([0, 0, 0, 0, 1, 1, 1, 1, 0, 0], dtype=np.int64)
    assert rules.play(v, 24, 22, b, 4) == ("win", 2)
    assert rules.play(v, 24, 22, b, 0) is None
    kind, (k1, k2, child), captured = rules.play(v, 22, 24, b, 4)
    assert (kind, k1, k2, captured) == ("child", 24, 24, 2)
    assert child.tolist() == [0, 1, 1, 0, 0, 0, 0, 0, 0, 0]


def test_long_move_laps():
    """A pit of 1 side (2 pits): s stones make (s - 1) // 2 full laps."""
    v = Variant(50, 1)
    for s in range(1, 51):
        for opp in range(0, 51 - s):
            if (50 - s - opp) % 2:
                continue
            rest = 50 - s - opp
            pairs = [(a, rest - a) for a in v.kazans if rest - a in v.kazans]
            for k1, k2 in pairs[:2]:
                _check_moves(v, k1, k2, np.array([s, opp], dtype=np.int64))


@given(st.integers(0, 12), st.integers(0, 2**32 - 1))
def test_random_symmetric_positions_have_equal_sides(half_k, seed):
    from bestemshe_dist.game.position import random_symmetric, symmetric_halves

    v = Variant(50, 5)
    k = 2 * half_k
    stones = v.board_stones(k, k) // 2
    assert symmetric_halves(v, (k, k)) == comb(stones + 4, 4)
    assert symmetric_halves(v, (k, k + 2)) == 0
    rng = np.random.default_rng(seed)
    pos = random_symmetric(v, (k, k), rng)
    assert pos.layer == (k, k) and sum(pos.own) == sum(pos.other) == stones and pos.legal_pits()
