"""Self-checks of the brute-force reference (tests/bruteforce.py).

These tests use SPEC.md and hand-worked examples only; they never touch the
package `bestemshe_dist`.
"""

import functools
import os
import struct

import pytest

try:  # works whether or not tests/ is a package
    from . import bruteforce as bf
except ImportError:
    import bruteforce as bf

WIN, LOSS, DRAW = bf.WIN, bf.LOSS, bf.DRAW

# Small variants (stones, pits) solved in the consistency checks.
SMALL = [(2, 1), (6, 1), (8, 2), (12, 2), (6, 3), (10, 3), (8, 4), (6, 5)]


@functools.cache
def solved(stones, pits):
    return bf.solve(stones, pits, with_distance=True)


# ---------------------------------------------------------------------------
# Geometry and rank
# ---------------------------------------------------------------------------


def test_win_kazan_and_layers():
    assert bf.win_kazan(50) == 26
    assert bf.win_kazan(12) == 8  # 6 is not > 6
    assert bf.win_kazan(10) == 6
    assert bf.win_kazan(14) == 8
    assert bf.win_kazan(4) == 4
    assert bf.win_kazan(2) == 2
    assert len(bf.layers(50, 5)) == 169
    assert max(k for lay in bf.layers(50, 5) for k in lay) == 24
    assert bf.layers(2, 1) == [(0, 0)]
    # 12 stones: kazans 0..6, layer (6, 6) has an empty board.
    assert bf.layer_size(12, 3, 6, 6) == 1
    assert bf.positions(12, 3, 6, 6) == [(0,) * 6]


def test_layer_sizes_from_spec():
    assert bf.layer_size(50, 5, 0, 0) == 12_565_671_261
    assert sum(bf.layer_size(50, 5, a, b) for a, b in bf.layers(50, 5)) == 125_698_242_527


@pytest.mark.parametrize(
    "stones,pits,k1,k2",
    [
        (50, 5, 24, 24),
        (50, 5, 22, 24),
        (50, 5, 20, 24),
        (50, 5, 24, 18),
        (12, 3, 0, 0),
        (12, 3, 2, 6),
        (12, 3, 6, 6),
        (10, 5, 0, 0),
        (12, 2, 0, 0),
        (14, 1, 0, 0),
        (8, 4, 2, 0),
        (6, 1, 2, 2),
    ],
)
def test_rank_is_a_bijection(stones, pits, k1, k2):
    pos = bf.positions(stones, pits, k1, k2)
    size = bf.layer_size(stones, pits, k1, k2)
    assert len(pos) == size == len(set(pos))
    r = stones - k1 - k2
    assert all(len(t) == 2 * pits and sum(t) == r and min(t) >= 0 for t in pos)
    assert sorted(bf.rank(t) for t in pos) == list(range(size))
    n = 2 * pits
    # extremes: all stones in the last pit -> 0, all in the first -> size-1
    assert bf.rank((0,) * (n - 1) + (r,)) == 0
    assert bf.rank((r,) + (0,) * (n - 1)) == size - 1


def test_rank_hand_values():
    # n = 4, r = 2: p = (1, 1, 2) for (1, 0, 1, 0):
    # C(0+1,1) + C(1+1,2) + C(2+2,3) = 1 + 1 + 4 = 6
    assert bf.rank((1, 0, 1, 0)) == 6
    # n = 2: rank = p_0 = pits[0]
    assert [bf.rank((a, 5 - a)) for a in range(6)] == list(range(6))


# ---------------------------------------------------------------------------
# The literal move, hand-worked
# ---------------------------------------------------------------------------


def test_move_single_stone():
    # 50/5, k=(6,6), s == 1 from pit 0: the stone goes to pit 1 (own), no
    # capture. Board (0,5,4,4,4 | 4,4,4,4,5), rotated for the opponent.
    t = (1, 4, 4, 4, 4, 4, 4, 4, 4, 5)
    assert bf.move(50, 5, 6, 6, t, 0) == ("child", (6, 6, (4, 4, 4, 4, 5, 0, 5, 4, 4, 4)), 0)
    # an empty pit is no move
    assert bf.move(50, 5, 6, 6, (0,) + t[1:], 0) is None


def test_move_single_stone_capture():
    # 50/5, k=(12,24), s == 1 from pit 4 lands in pit 5 (1 -> 2): capture 2.
    # Board (0,0,0,0,0 | 0,3,3,3,3); child k = (24, 14).
    t = (0, 0, 0, 0, 1, 1, 3, 3, 3, 3)
    assert bf.move(50, 5, 12, 24, t, 4) == ("child", (24, 14, (0, 3, 3, 3, 3, 0, 0, 0, 0, 0)), 2)
    # with two stones: one back into pit 4, one into pit 5 -> same capture
    t2 = (0, 0, 0, 0, 2, 1, 3, 3, 3, 1)
    assert bf.move(50, 5, 12, 24, t2, 4) == ("child", (24, 14, (0, 3, 3, 3, 1, 0, 0, 0, 0, 1)), 2)


def test_move_start_position():
    start = (5,) * 10
    # pit 0: one back into 0, then pits 1..4: (1,6,6,6,6 | 5,5,5,5,5), no capture
    assert bf.move(50, 5, 0, 0, start, 0) == ("child", (0, 0, (5, 5, 5, 5, 5, 1, 6, 6, 6, 6)), 0)
    # pit 4: one back into 4, then 5,6,7,8; pit 8 holds 6 -> capture 6.
    # Board (5,5,5,5,1 | 6,6,6,0,5)
    assert bf.move(50, 5, 0, 0, start, 4) == ("child", (0, 6, (6, 6, 6, 0, 5, 5, 5, 5, 5, 1)), 6)


def test_move_long_wrapping():
    # 50/5, k=(2,24), pit 2 holds 23 (> 10): one back into pit 2, the other
    # 22 go 3..9 (7), 0..9 (10), 0..4 (5). Pit 2 gets back+2 laps = 3,
    # pits 3,4: 3 each, 0,1: 2 each, 5..9: 2 each (+1 already in pit 5).
    # Board (2,2,3,3,3 | 3,2,2,2,2), last stone in pit 4 (own): no capture.
    t = (0, 0, 23, 0, 0, 1, 0, 0, 0, 0)
    assert bf.move(50, 5, 2, 24, t, 2) == ("child", (24, 2, (3, 2, 2, 2, 2, 2, 2, 3, 3, 3)), 0)
    # 50/5, k=(12,12), pit 2 holds 25: the other 24 go 3..9, 0..9, 0..6;
    # pit 6 ends with 1 + 3 = 4 (even) -> capture 4, k1 -> 16.
    # Board (2,2,3,3,3 | 3,0,2,2,2).
    t = (0, 0, 25, 0, 0, 0, 1, 0, 0, 0)
    assert bf.move(50, 5, 12, 12, t, 2) == ("child", (12, 16, (3, 0, 2, 2, 2, 2, 2, 3, 3, 3)), 4)
    # 12/3, k=(2,2), pit 1 holds 8 (> 6): back into 1, then 2,3,4,5,0,1,2.
    # Board (1,2,2 | 1,1,1), last in pit 2 (own).
    assert bf.move(12, 3, 2, 2, (0, 8, 0, 0, 0, 0), 1) == ("child", (2, 2, (1, 1, 1, 1, 2, 2)), 0)


def test_move_wins():
    # Capture that empties the opponent row: 50/5, k=(22,24); pit 4 holds 2:
    # one back, one into pit 5 (1 -> 2) -> capture 2; opponent row empty -> win
    # (kazan 24 < 26, so the row alone decides it).
    t = (0, 0, 0, 1, 2, 1, 0, 0, 0, 0)
    assert bf.move(50, 5, 22, 24, t, 4) == ("win", 2)
    # Win by kazan: 50/5, k=(24,20); pit 4 -> pit 5 (3 -> 4): capture 4,
    # kazan 28 >= 26 -> win though the opponent row is not empty.
    t = (0, 0, 0, 0, 1, 3, 1, 1, 0, 0)
    assert bf.move(50, 5, 24, 20, t, 4) == ("win", 4)
    # 12/3 (win kazan 8), k=(6,0): pit 2 -> pit 3 (1 -> 2), kazan 8 -> win.
    assert bf.move(12, 3, 6, 0, (0, 0, 1, 1, 1, 3), 2) == ("win", 2)
    # 12/3 k=(4,0): capture 2 -> kazan 6 < 8, opponent row not empty: no win.
    assert bf.move(12, 3, 4, 0, (0, 0, 1, 1, 1, 5), 2) == ("child", (0, 6, (0, 1, 5, 0, 0, 0)), 2)
    # Rule 4 read literally ("after the capture", capture or not): a move
    # that leaves an already empty opponent row empty wins at once
    # (unreachable, but indexed). 50/5 k=(24,24), pit 0 holds 2.
    t = (2, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    assert bf.move(50, 5, 24, 24, t, 0) == ("win", 0)


def test_move_conserves_stones():
    for stones, pits in [(12, 3), (10, 5), (8, 2)]:
        for k1, k2 in bf.layers(stones, pits):
            for t in bf.positions(stones, pits, k1, k2):
                for i in range(pits):
                    res = bf.move(stones, pits, k1, k2, t, i)
                    if t[i] == 0:
                        assert res is None
                        continue
                    assert res is not None
                    if res[0] == "child":
                        (a, b, c), cap = res[1], res[2]
                        assert a == k2 and b == k1 + cap
                        assert cap % 2 == 0 and b < bf.win_kazan(stones)
                        assert sum(c) + cap == sum(t)
                        assert any(c[:pits])  # opponent row not empty
            if stones == 10:
                break


# ---------------------------------------------------------------------------
# Values: min-max consistency, checked with move() directly
# ---------------------------------------------------------------------------


def _options(stones, pits, k1, k2, t, values):
    """List of (kind, child_value) for each legal move."""
    out = []
    for i in range(pits):
        res = bf.move(stones, pits, k1, k2, t, i)
        if res is None:
            continue
        if res[0] == "win":
            out.append(("win", None, None, res[1]))
        else:
            a, b, c = res[1]
            out.append(("child", values[(a, b)][c], (a, b, c), res[2]))
    return out


@pytest.mark.parametrize("stones,pits", SMALL + [(12, 3)])
def test_values_are_consistent(stones, pits):
    values, _ = solved(stones, pits)
    assert set(values) == set(bf.layers(stones, pits))
    for (k1, k2), vals in values.items():
        assert len(vals) == bf.layer_size(stones, pits, k1, k2)
        for t, v in vals.items():
            opts = _options(stones, pits, k1, k2, t, values)
            child_vals = [cv for kind, cv, _, _ in opts if kind == "child"]
            immediate = any(kind == "win" for kind, _, _, _ in opts)
            if v == WIN:
                assert immediate or LOSS in child_vals
            elif v == LOSS:
                assert not immediate and all(cv == WIN for cv in child_vals)
                if not any(t[:pits]):
                    assert not opts
            else:
                assert v == DRAW
                assert not immediate and LOSS not in child_vals
                assert DRAW in child_vals


def test_no_move_is_loss_and_some_known_values():
    values, dist = solved(12, 3)
    # own row empty -> LOSS, distance 0
    for (k1, k2), vals in values.items():
        for t, v in vals.items():
            if not any(t[:3]):
                assert v == LOSS and dist[(k1, k2)][t] == 0
            elif dist[(k1, k2)][t] is not None:
                assert dist[(k1, k2)][t] >= 1
    # 2 stones, 1 pit: win kazan 2. (1 | 1): the stone goes to pit 1
    # (1 -> 2) -> capture 2 -> win. (2 | 0): back 1, 1 into pit 1, odd,
    # no capture -> (1 | 1) for the opponent, who wins: LOSS.
    v2, d2 = solved(2, 1)
    assert v2[(0, 0)] == {(0, 2): LOSS, (1, 1): WIN, (2, 0): LOSS}
    assert d2[(0, 0)] == {(0, 2): 0, (1, 1): 1, (2, 0): 2}


# ---------------------------------------------------------------------------
# Distances
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("stones,pits", SMALL + [(12, 3)])
def test_distance_recursion(stones, pits):
    """WIN: d = min over winning options of (1 for an exit, 1 + d(c) for a
    non-capture move to a LOSS c); LOSS: d = max over moves of (1 for an
    exit, 1 + d(c) for a non-capture move); no move: 0; DRAW: None."""
    values, dist = solved(stones, pits)
    for (k1, k2), vals in values.items():
        for t, v in vals.items():
            d = dist[(k1, k2)][t]
            opts = _options(stones, pits, k1, k2, t, values)
            if v == DRAW:
                assert d is None
                continue
            if not opts:
                assert v == LOSS and d == 0
                continue

            def step(o):
                kind, _cv, ch, cap = o
                if kind == "win" or cap:
                    return 1
                return 1 + dist[ch[:2]][ch[2]]

            if v == WIN:
                wins = [o for o in opts if o[0] == "win" or o[1] == LOSS]
                assert d == min(step(o) for o in wins)
                if d > 1:  # the hurrying winner has a quiet move to LOSS d-1
                    assert any(
                        o[0] == "child" and o[3] == 0 and o[1] == LOSS and dist[o[2][:2]][o[2][2]] == d - 1
                        for o in opts
                    )
            else:
                assert all(o[1] == WIN for o in opts)
                assert d == max(step(o) for o in opts)


def _naive_rounds(stones, pits, values):
    """Fully literal rounds: every round rescans every undecided position of
    the pair, using only pair decisions from earlier rounds."""
    dist = {}
    for a, b in bf.layers(stones, pits):
        if a > b:
            continue
        pair = {(a, b), (b, a)}
        pos = [(lay, t) for lay in pair for t in bf.positions(stones, pits, *lay)]
        dec = {}
        for lay, t in pos:
            if not any(t[:pits]):
                dec[(lay, t)] = (LOSS, 0)
        d = 1
        while True:
            new = {}
            for lay, t in pos:
                if (lay, t) in dec:
                    continue
                opts = []
                for i in range(pits):
                    res = bf.move(stones, pits, lay[0], lay[1], t, i)
                    if res is None:
                        continue
                    if res[0] == "win":
                        opts.append(WIN)  # the option is "won"
                        continue
                    ca, cb, c = res[1]
                    if res[2]:
                        assert (ca, cb) not in pair
                        cv = values[(ca, cb)][c]
                    else:
                        got = dec.get(((ca, cb), c))
                        cv = got[0] if got else None
                    opts.append({LOSS: WIN, WIN: LOSS}.get(cv))
                if WIN in opts:
                    new[(lay, t)] = WIN
                elif all(o == LOSS for o in opts):
                    new[(lay, t)] = LOSS
            if not new:
                break
            for key, v in new.items():
                dec[key] = (v, d)
            d += 1
        for lay, t in pos:
            got = dec.get((lay, t))
            dist[(lay, t)] = got or (DRAW, None)
    return dist


@pytest.mark.parametrize("stones,pits", [(2, 1), (6, 1), (8, 2), (12, 2), (6, 3), (8, 3)])
def test_distance_matches_naive_rounds(stones, pits):
    values, dist = solved(stones, pits)
    naive = _naive_rounds(stones, pits, values)
    for lay, vals in values.items():
        for t, v in vals.items():
            assert naive[(lay, t)] == (v, dist[lay][t])


# ---------------------------------------------------------------------------
# Bitsets and the file format
# ---------------------------------------------------------------------------


def test_layer_bitsets():
    values, _ = solved(12, 3)
    bits = bf.layer_bitsets(12, 3, values)
    assert bits.keys() == values.keys()
    for (k1, k2), (win, draw) in bits.items():
        size = bf.layer_size(12, 3, k1, k2)
        assert len(win) == len(draw) == (size + 7) // 8
        assert not any(w & d for w, d in zip(win, draw))
        for t, v in values[(k1, k2)].items():
            r = bf.rank(t)
            w = (win[r // 8] >> (r % 8)) & 1
            d = (draw[r // 8] >> (r % 8)) & 1
            assert (w, d) == {WIN: (1, 0), DRAW: (0, 1), LOSS: (0, 0)}[v]
        # bits past the layer are zero
        for r in range(size, 8 * len(win)):
            assert not (win[r // 8] >> (r % 8)) & 1
            assert not (draw[r // 8] >> (r % 8)) & 1


def _write_spec_file(path, raw, level=19):
    """Writer straight from SPEC, used only to test the reader."""
    import zstandard

    B = bf.BLOCK_BYTES
    nblocks = -(-len(raw) // B)
    cctx = zstandard.ZstdCompressor(level=level, write_content_size=True, write_checksum=False)
    frames = []
    for b in range(nblocks):
        block = raw[b * B : (b + 1) * B]
        block = block + bytes(B - len(block))
        frames.append(cctx.compress(block))
    offs = [4 + 4 * (nblocks + 1)]
    for f in frames:
        offs.append(offs[-1] + len(f))
    with open(path, "wb") as fh:
        fh.write(struct.pack("<I", nblocks))
        fh.write(struct.pack(f"<{nblocks + 1}I", *offs))
        for f in frames:
            fh.write(f)


def test_read_layer_file_roundtrip(tmp_path):
    bits = bf.layer_bitsets(12, 3, solved(12, 3)[0])
    win, draw = bits[(0, 0)]
    nbits = bf.layer_size(12, 3, 0, 0)
    p = tmp_path / "layer_0_0_win.bin"
    _write_spec_file(p, win)
    assert bf.read_layer_file(p, nbits) == win
    p = tmp_path / "layer_0_0_draw.bin"
    _write_spec_file(p, draw)
    assert bf.read_layer_file(p, nbits) == draw
    # two blocks: 4 MiB + 3 bytes of bitset
    nbits = 8 * bf.BLOCK_BYTES + 20
    raw = bytes((i * 37) & 0xFF for i in range(256)) * (bf.BLOCK_BYTES // 256)
    raw += b"\x05\x06\x07"
    p = tmp_path / "two.bin"
    _write_spec_file(p, raw, level=1)
    with open(p, "rb") as fh:
        assert struct.unpack("<I", fh.read(4))[0] == 2
    assert bf.read_layer_file(p, nbits) == raw


def test_empty_block_file_size_fact(tmp_path):
    import zstandard

    # The size fact is stated for Zstandard 1.5.7, which pyproject pins.
    assert zstandard.ZSTD_VERSION == (1, 5, 7)
    p = tmp_path / "zero.bin"
    _write_spec_file(p, bytes(1))
    assert os.path.getsize(p) == 157
    assert bf.read_layer_file(p, 1) == b"\x00"
