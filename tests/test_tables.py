"""2-bit code arrays (bestemshe_dist.solve.code_arrays) and their win/draw bitsets and layer
files (bestemshe_dist.data.layer_files), checked against plain numpy and SPEC.md's bit layout."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bestemshe_dist.data import format as fmt
from bestemshe_dist.data import layer_files as tables
from bestemshe_dist.errors import FormatError
from bestemshe_dist.solve import code_arrays

PROPS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])

UNKNOWN, WIN, LOSS = code_arrays.UNKNOWN, code_arrays.WIN, code_arrays.LOSS
BIG_NPOS = fmt.BLOCK_BITS + 100  # 33_554_532 positions: two blocks


# --- independent helpers (numpy only) -----------------------------------------


def pack(values: np.ndarray) -> np.ndarray:
    """Codes of a value array (0/1/2 per position): 2 bits each, 32 to a uint64 word,
    position i at bits 2 (i % 32) of word i // 32."""
    npos = len(values)
    words = max(1, -(-npos // 32))
    padded = np.zeros(words * 32, dtype=np.uint8)
    padded[:npos] = values
    grid = padded.reshape(words, 32)
    codes = np.zeros(words, dtype=np.uint64)
    for j in range(32):
        codes |= grid[:, j].astype(np.uint64) << np.uint64(2 * j)
    return codes


def unpack(codes: np.ndarray, npos: int) -> np.ndarray:
    out = np.empty((len(codes), 32), dtype=np.uint8)
    for j in range(32):
        out[:, j] = ((codes >> np.uint64(2 * j)) & np.uint64(3)).astype(np.uint8)
    return out.reshape(-1)[:npos]


def bits_of(bitset: np.ndarray, npos: int) -> np.ndarray:
    """Bit r of a SPEC bitset: bit r % 8 (LSB first) of byte r // 8."""
    return np.unpackbits(np.asarray(bitset, dtype=np.uint8), bitorder="little")[:npos].astype(bool)


def expected_bitset(mask: np.ndarray) -> np.ndarray:
    return np.packbits(mask.astype(np.uint8), bitorder="little")


@st.composite
def values_strategy(draw):
    """A value array of 1..5000 positions: drawn element by element when short, else
    from a seeded numpy generator with drawn proportions (long runs included)."""
    if draw(st.booleans()):
        vals = draw(st.lists(st.sampled_from([UNKNOWN, WIN, LOSS]), min_size=1, max_size=100))
        return np.array(vals, dtype=np.uint8)
    npos = draw(st.integers(1, 5000))
    seed = draw(st.integers(0, 2**32 - 1))
    weights = np.array(draw(st.tuples(*[st.sampled_from([0, 1, 2, 5])] * 3)), dtype=float)
    if weights.sum() == 0:
        weights[:] = 1
    return random_values(npos, seed, tuple(weights / weights.sum()))


def random_values(npos, seed, weights=None):
    rng = np.random.default_rng(seed)
    if weights is None:
        return rng.integers(0, 3, size=npos, dtype=np.uint8)
    return rng.choice(np.array([UNKNOWN, WIN, LOSS], dtype=np.uint8), size=npos, p=weights)


@pytest.fixture(scope="module")
def big():
    """A two-block layer: random values, built with numpy."""
    values = random_values(BIG_NPOS, 11)
    return values, pack(values)


# --- code_arrays: codes ------------------------------------------------------------


def test_code_constants():
    assert (UNKNOWN, WIN, LOSS) == (0, 1, 2)


@pytest.mark.parametrize("npos,words", [(0, 1), (1, 1), (31, 1), (32, 1), (33, 2), (64, 2), (65, 3)])
def test_new_codes_size(npos, words):
    c = code_arrays.new_codes(npos)
    assert c.dtype == np.uint64 and c.shape == (words,) and not c.any()
    assert code_arrays.code_words(npos) == words


@settings(max_examples=200, **PROPS)
@given(values_strategy())
def test_set_get_code(values):
    npos = len(values)
    codes = code_arrays.new_codes(npos)
    for i, v in enumerate(values.tolist()):
        if v:
            code_arrays.set_code(codes, i, v)
    assert (codes == pack(values)).all()
    got = [int(code_arrays.get_code(codes, i)) for i in range(npos)]
    assert got == values.tolist()
    assert (unpack(codes, npos) == values).all()


def test_set_code_layout():
    codes = code_arrays.new_codes(100)
    code_arrays.set_code(codes, 0, WIN)
    code_arrays.set_code(codes, 31, LOSS)
    code_arrays.set_code(codes, 32, LOSS)
    code_arrays.set_code(codes, 99, WIN)
    assert int(codes[0]) == 1 | (2 << 62)
    assert int(codes[1]) == 2
    assert int(codes[3]) == 1 << 6
    assert int(codes[2]) == 0
    assert [int(code_arrays.get_code(codes, i)) for i in (0, 1, 31, 32, 33, 99)] == [1, 0, 2, 2, 0, 1]


@settings(max_examples=300, **PROPS)
@given(values_strategy(), st.booleans())
def test_count_codes(values, junk_tail):
    npos = len(values)
    codes = pack(values)
    if junk_tail and npos % 32:
        # Codes past npos name no position: they must not be counted.
        codes[-1] |= np.uint64(0x5555555555555555) << np.uint64(2 * (npos % 32))
    wins, losses, undecided = code_arrays.count_codes(codes, npos)
    assert (int(wins), int(losses), int(undecided)) == (
        int((values == WIN).sum()),
        int((values == LOSS).sum()),
        int((values == UNKNOWN).sum()),
    )


def test_count_codes_big(big):
    values, codes = big
    counts = code_arrays.count_codes(codes, BIG_NPOS)
    want = (int((values == WIN).sum()), int((values == LOSS).sum()), int((values == UNKNOWN).sum()))
    assert tuple(int(c) for c in counts) == want


# --- code_arrays: merge_codes -------------------------------------------------------


@settings(max_examples=200, **PROPS)
@given(st.data())
def test_merge_codes(data):
    nwords = data.draw(st.integers(1, 200))
    first = data.draw(st.integers(0, nwords - 1))
    ndelta = data.draw(st.integers(0, nwords - first))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    words = st.integers(0, 2**64 - 1)
    codes = rng.integers(0, 2**64 - 1, size=nwords, dtype=np.uint64, endpoint=True)
    if data.draw(st.booleans()):
        codes[:] = 0
    delta = rng.integers(0, 2**64 - 1, size=ndelta, dtype=np.uint64, endpoint=True)
    if ndelta:
        delta[0] = data.draw(words)
    want = codes.copy()
    want[first : first + ndelta] |= delta
    delta_before = delta.copy()
    code_arrays.merge_codes(codes, first, delta)
    assert (codes == want).all()
    assert (delta == delta_before).all()


def test_merge_codes_is_a_union_of_decisions():
    """Merging chunks of decisions into a layer gives the layer with all of them."""
    values = random_values(10_000, 3)
    codes = code_arrays.new_codes(10_000)
    packed = pack(values)
    for lo in range(0, len(packed), 37):
        code_arrays.merge_codes(codes, lo, packed[lo : lo + 37].copy())
    assert (codes == packed).all()
    # ORing the same decisions again changes nothing (values never go back).
    code_arrays.merge_codes(codes, 5, packed[5:50].copy())
    assert (codes == packed).all()


# --- tables: split_codes / codes_from_bitsets --------------------------------------


def _check_split(values, codes):
    npos = len(values)
    win, draw, counts = tables.split_codes(codes, npos)
    nblocks = fmt.blocks_for_bits(npos)
    assert win.dtype == np.uint8 and draw.dtype == np.uint8
    assert win.shape == draw.shape == (nblocks * fmt.BLOCK_BYTES,)
    assert counts == (
        int((values == WIN).sum()),
        int((values == UNKNOWN).sum()),
        int((values == LOSS).sum()),
    )
    assert all(type(c) is int for c in counts)
    nbytes = fmt.bitset_bytes(npos)
    # SPEC layout: win bit for WIN, draw bit for UNKNOWN (DRAW), neither for LOSS.
    assert (win[:nbytes] == expected_bitset(values == WIN)).all()
    assert (draw[:nbytes] == expected_bitset(values == UNKNOWN)).all()
    # Bits past npos (the rest of the last byte and every padding byte) are zero.
    assert not win[nbytes:].any() and not draw[nbytes:].any()
    assert not bits_of(win, nbytes * 8)[npos:].any()
    assert not bits_of(draw, nbytes * 8)[npos:].any()
    assert not (win & draw).any()
    return win, draw, counts


@settings(max_examples=150, **PROPS)
@given(values_strategy(), st.booleans())
def test_split_codes_and_back(values, junk_tail):
    npos = len(values)
    codes = pack(values)
    clean = codes.copy()
    if junk_tail and npos % 32:
        # Junk past npos in the last word (WIN and LOSS codes) is ignored.
        junk = np.uint64(0x9999999999999999) << np.uint64(2 * (npos % 32))
        codes[-1] |= junk
    win, draw, _ = _check_split(values, codes)

    back = tables.codes_from_bitsets(win, draw, npos, 4, 6)
    assert back.dtype == np.uint64 and back.shape == (code_arrays.code_words(npos),)
    assert (back == clean).all()
    # The same from bitsets cut to exactly ceil(npos / 8) bytes, as a reader returns them.
    nbytes = fmt.bitset_bytes(npos)
    back = tables.codes_from_bitsets(win[:nbytes].copy(), draw[:nbytes].copy(), npos, 4, 6)
    assert (back == clean).all()


def test_split_codes_layout_by_hand():
    # 10 positions: W L D W D D L L W D
    values = np.array([1, 2, 0, 1, 0, 0, 2, 2, 1, 0], dtype=np.uint8)
    win, draw, counts = tables.split_codes(pack(values), 10)
    assert counts == (3, 4, 3)
    assert win[:2].tolist() == [0b00001001, 0b00000001]
    assert draw[:2].tolist() == [0b00110100, 0b00000010]
    assert not win[2:].any() and not draw[2:].any()


def test_split_codes_exact_block():
    """A layer of exactly one block of bits fills it; one more bit takes a second block."""
    for npos, blocks in [(fmt.BLOCK_BITS, 1), (fmt.BLOCK_BITS + 1, 2)]:
        values = np.zeros(npos, dtype=np.uint8)  # all DRAW
        values[-1] = WIN
        win, draw, counts = tables.split_codes(pack(values), npos)
        assert win.shape == (blocks * fmt.BLOCK_BYTES,)
        assert counts == (1, npos - 1, 0)
        last = npos - 1
        assert win[last // 8] == 1 << (last % 8)
        assert int(np.count_nonzero(win)) == 1
        assert draw[last // 8] == (1 << (last % 8)) - 1
        assert not draw[last // 8 + 1 :].any()


def test_split_codes_big(big):
    values, codes = big
    win, draw, _counts = _check_split(values, codes)
    assert win.shape == (2 * fmt.BLOCK_BYTES,)
    back = tables.codes_from_bitsets(win, draw, BIG_NPOS, 0, 0)
    assert (back == codes).all()


# --- tables: encode_layer / decode_layer (compressed files) --------------------------


@settings(max_examples=25, **PROPS)
@given(values_strategy())
def test_encode_decode_layer(values):
    npos = len(values)
    codes = pack(values)
    win_file, draw_file, counts = tables.encode_layer(codes, npos)
    assert counts == (
        int((values == WIN).sum()),
        int((values == UNKNOWN).sum()),
        int((values == LOSS).sum()),
    )
    nbytes = fmt.bitset_bytes(npos)
    # The files hold the SPEC bitsets (checked with the format module's own reader).
    raw_win = fmt.decode_file(win_file, "w", npos)
    raw_draw = fmt.decode_file(draw_file, "d", npos)
    assert (raw_win == expected_bitset(values == WIN)).all()
    assert (raw_draw == expected_bitset(values == UNKNOWN)).all()
    assert len(raw_win) == nbytes
    # Padding past npos is zero in the stored (decompressed) block too.
    offsets = fmt.parse_header(win_file, len(win_file), "w", npos)
    block = fmt.decode_block(win_file[offsets[0] : offsets[1]], "w", 0)
    assert not any(block[nbytes:])
    assert (tables.decode_layer(win_file, draw_file, npos, 2, 8) == codes).all()


def test_encode_decode_big_random_layer(big):
    values, codes = big
    win_file, draw_file, counts = tables.encode_layer(codes, BIG_NPOS, threads=2)
    assert counts == (
        int((values == WIN).sum()),
        int((values == UNKNOWN).sum()),
        int((values == LOSS).sum()),
    )
    assert (tables.decode_layer(win_file, draw_file, BIG_NPOS, 24, 0) == codes).all()


def test_encode_decode_big_layer():
    """Two blocks per file: sparse values (level 19 on random blocks is slow) with
    decisions around the block boundary and at the end."""
    npos = BIG_NPOS
    values = np.zeros(npos, dtype=np.uint8)
    rng = np.random.default_rng(5)
    for lo, hi in [(0, 5000), (fmt.BLOCK_BITS - 3000, fmt.BLOCK_BITS + 40), (npos - 60, npos)]:
        values[lo:hi] = rng.choice(np.array([UNKNOWN, WIN, LOSS], dtype=np.uint8), size=hi - lo)
    values[fmt.BLOCK_BITS - 1] = WIN
    values[fmt.BLOCK_BITS] = LOSS
    values[npos - 1] = WIN
    codes = pack(values)
    win_file, draw_file, counts = tables.encode_layer(codes, npos, threads=2)
    assert counts == (
        int((values == WIN).sum()),
        int((values == UNKNOWN).sum()),
        int((values == LOSS).sum()),
    )
    for f in (win_file, draw_file):
        assert int.from_bytes(f[:4], "little") == 2
    raw_win = fmt.decode_file(win_file, "w", npos)
    assert bits_of(raw_win, npos)[fmt.BLOCK_BITS - 1] and not bits_of(raw_win, npos)[fmt.BLOCK_BITS]
    assert (raw_win == expected_bitset(values == WIN)).all()
    back = tables.decode_layer(win_file, draw_file, npos, 10, 12)
    assert (back == codes).all()


def test_all_loss_and_all_draw_files():
    """A layer of only losses has two empty bitsets: the 157-byte zero file each."""
    npos = 1000
    loss = pack(np.full(npos, LOSS, dtype=np.uint8))
    win_file, draw_file, counts = tables.encode_layer(loss, npos)
    assert counts == (0, 0, npos)
    assert len(win_file) == len(draw_file) == 157
    draw_only = code_arrays.new_codes(npos)
    win_file, draw_file, counts = tables.encode_layer(draw_only, npos)
    assert counts == (0, npos, 0)
    assert len(win_file) == 157
    assert (tables.decode_layer(win_file, draw_file, npos, 0, 0) == draw_only).all()


# --- refusing a position both win and draw ---------------------------------------


@settings(max_examples=100, **PROPS)
@given(st.integers(1, 5000), st.data())
def test_both_bits_is_a_format_error(npos, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    values = rng.integers(0, 3, size=npos, dtype=np.uint8)
    win, draw, _ = tables.split_codes(pack(values), npos)
    r = data.draw(st.integers(0, npos - 1))
    win[r // 8] |= 1 << (r % 8)
    draw[r // 8] |= 1 << (r % 8)
    with pytest.raises(FormatError, match=r"layer 4_6\b"):
        tables.codes_from_bitsets(win, draw, npos, 4, 6)


def test_both_bits_past_npos_name_no_position():
    npos = 13
    values = np.array([1, 2, 0] * 4 + [1], dtype=np.uint8)
    win, draw, _ = tables.split_codes(pack(values), npos)
    win[1] |= 0x80
    draw[1] |= 0x80  # bit 15: past npos
    assert (tables.codes_from_bitsets(win, draw, npos, 0, 2) == pack(values)).all()


def test_decode_layer_refuses_both_bits():
    npos = 100
    win = np.zeros(13, dtype=np.uint8)
    draw = np.zeros(13, dtype=np.uint8)
    win[5] = 0b10
    draw[5] = 0b110  # rank 41 is both
    win_file = fmt.encode_bitset(win, npos)
    draw_file = fmt.encode_bitset(draw, npos)
    with pytest.raises(FormatError) as err:
        tables.decode_layer(win_file, draw_file, npos, 12, 14)
    assert "12_14" in str(err.value)
