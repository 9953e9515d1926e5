"""The layer file format (SPEC.md, "The file format"): sizes, round trips,
byte compatibility with the published files, and rejection of faulty files."""

import re
import struct
from math import comb

import numpy as np
import pytest
import zstandard
from conftest import FIXTURE_M40
from hypothesis import given, settings
from hypothesis import strategies as st

from bestemshe_dist.data import format as fmt
from bestemshe_dist.data.format import (
    BLOCK_BITS,
    BLOCK_BYTES,
    bitset_bytes,
    blocks_for_bits,
    build_file,
    compress_block,
    decode_block,
    decode_file,
    encode_bitset,
    frame_sizes,
    header_bytes_needed,
    header_size,
    parse_header,
    stream_blocks,
)
from bestemshe_dist.errors import FormatError

FIXTURES = FIXTURE_M40
NAME = "layer_4_6_win.bin"


def _header(num_blocks, offsets):
    return struct.pack(f"<{1 + len(offsets)}I", num_blocks, *offsets)


# --- sizes -------------------------------------------------------------------


def test_sizes():
    assert bitset_bytes(0) == 0
    assert bitset_bytes(1) == 1
    assert bitset_bytes(8) == 1
    assert bitset_bytes(9) == 2
    assert blocks_for_bits(1) == 1
    assert blocks_for_bits(BLOCK_BITS) == 1
    assert blocks_for_bits(BLOCK_BITS + 1) == 2
    assert header_size(1) == 12
    assert BLOCK_BITS == 8 * BLOCK_BYTES


def test_zero_block_is_145_bytes():
    assert len(compress_block(bytes(BLOCK_BYTES))) == 145
    # Short input is zero-padded, so it gives the same frame.
    assert compress_block(b"") == compress_block(np.zeros(BLOCK_BYTES, dtype=np.uint8))


@pytest.mark.parametrize("nbits", [1, 7, 8, 92378, BLOCK_BITS - 1, BLOCK_BITS])
def test_empty_one_block_file_is_157_bytes(nbits):
    data = encode_bitset(np.zeros(bitset_bytes(nbits), dtype=np.uint8), nbits)
    assert len(data) == 157
    assert struct.unpack_from("<3I", data) == (1, 12, 157)


def test_frame_sizes():
    assert frame_sizes(np.array([12, 157, 300])).tolist() == [145, 143]


# --- round trips -------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 4000).flatmap(
        lambda n: st.tuples(st.just(n), st.binary(min_size=(n + 7) // 8, max_size=(n + 7) // 8 + 3))
    )
)
def test_round_trip_small(case):
    nbits, raw = case
    data = encode_bitset(raw, nbits)
    out = decode_file(data, NAME, nbits)
    expect = np.frombuffer(raw, dtype=np.uint8)[: bitset_bytes(nbits)].copy()
    if nbits % 8:
        expect[-1] &= (1 << (nbits % 8)) - 1
    assert out.dtype == np.uint8
    assert np.array_equal(out, expect)
    # Without nbits the padded blocks come back whole, padding zero.
    whole = decode_file(data, NAME)
    assert len(whole) == BLOCK_BYTES
    assert np.array_equal(whole[: len(expect)], expect)
    assert not whole[len(expect) :].any()


def test_bits_past_nbits_are_cleared():
    nbits = 13
    ones = np.full(10, 0xFF, dtype=np.uint8)  # extra bytes past the bitset too
    data = encode_bitset(ones, nbits)
    assert data == encode_bitset(np.array([0xFF, 0x1F], dtype=np.uint8), nbits)
    assert decode_file(data, NAME, nbits).tolist() == [0xFF, 0x1F]
    assert not decode_file(data, NAME)[2:].any()


def test_round_trip_two_blocks():
    nbits = BLOCK_BITS + 12345
    bits = np.zeros(bitset_bytes(nbits) + 5, dtype=np.uint8)
    rng = np.random.default_rng(7)
    for rank in [0, 1, BLOCK_BITS - 3, BLOCK_BITS - 1, BLOCK_BITS, BLOCK_BITS + 1, nbits - 2, nbits - 1]:
        bits[rank // 8] |= 1 << (rank % 8)
    for rank in rng.integers(0, nbits, 1000):
        bits[rank // 8] |= 1 << (rank % 8)
    bits[bitset_bytes(nbits) - 1] |= 0xFE  # bits past nbits (nbits % 8 == 1)
    bits[bitset_bytes(nbits) :] = 0xAA  # bytes past the bitset
    data = encode_bitset(bits, nbits)
    assert struct.unpack_from("<I", data)[0] == 2
    out = decode_file(data, NAME, nbits)
    expect = bits[: bitset_bytes(nbits)].copy()
    expect[-1] &= 0x01
    assert len(out) == bitset_bytes(nbits)
    assert np.array_equal(out, expect)
    for rank in [BLOCK_BITS - 1, BLOCK_BITS, nbits - 1]:
        assert out[rank // 8] >> (rank % 8) & 1


def test_header_bytes_needed():
    data = encode_bitset(np.zeros(1, dtype=np.uint8), 3)
    assert header_bytes_needed(data[:4]) == 12
    with pytest.raises(FormatError, match=NAME):
        header_bytes_needed(data[:3], NAME)
    with pytest.raises(FormatError, match=NAME):
        header_bytes_needed(struct.pack("<I", 1000), NAME, file_size=157)


# --- byte compatibility with the published files -----------------------------


def _fixture_files():
    return sorted(FIXTURES.glob("layer_*_*_*.bin"))


def test_fixture_present():
    assert len(_fixture_files()) == 30


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: p.name)
def test_published_files_re_encode_identically(path):
    k1, k2 = map(int, re.fullmatch(r"layer_(\d+)_(\d+)_(win|draw)\.bin", path.name).groups()[:2])
    nbits = comb(50 - k1 - k2 + 9, 9)
    data = path.read_bytes()
    bits = decode_file(data, path.name, nbits)
    assert len(bits) == bitset_bytes(nbits)
    assert encode_bitset(bits, nbits) == data


@pytest.mark.parametrize("read_bytes", [1, 9_000_000, 64 << 20])
def test_streamed_blocks_equal_the_decoded_file_and_hash_the_whole_file(monkeypatch, read_bytes):
    """Blocks read in ranges of about STREAM_BYTES (one block a read, several, all)."""
    import hashlib

    monkeypatch.setattr(fmt, "STREAM_BYTES", read_bytes)
    nbits = 3 * BLOCK_BITS + 13  # the last block short, its last byte partly past nbits
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 256, bitset_bytes(nbits) + 3, dtype=np.uint8)
    data = encode_bitset(bits, nbits)
    reads = []

    def read(start, end):
        reads.append((start, end))
        return data[start:end]

    hasher = hashlib.sha256()
    blocks = list(stream_blocks(read, len(data), NAME, nbits, None, hasher))
    assert [b for b, _ in blocks] == [0, 1, 2, 3]
    assert np.array_equal(
        np.frombuffer(b"".join(raw for _, raw in blocks), np.uint8), decode_file(data, NAME, nbits)
    )
    assert hasher.hexdigest() == hashlib.sha256(data).hexdigest()
    assert len(reads) == {1: 5, 9_000_000: 3, 64 << 20: 2}[read_bytes]  # the header, then the frames


def test_a_stream_stops_at_a_damaged_frame_or_a_short_file(two_block_file):
    nbits, data = two_block_file
    offsets = parse_header(data, len(data), NAME, nbits)
    garbled = bytearray(data)
    garbled[int(offsets[1]) + 20] ^= 0xFF
    for bad, needle in [(bytes(garbled), "block 1"), (data[:-1], "")]:
        seen = []
        with pytest.raises(FormatError, match=re.escape(NAME) + ".*" + needle):
            for b, _raw in stream_blocks(lambda s, e, bad=bad: bad[s:e], len(bad), NAME, nbits):
                seen.append(b)
        assert seen in ([], [0])  # nothing past the fault


# --- rejection ---------------------------------------------------------------


@pytest.fixture(scope="module")
def two_block_file():
    nbits = BLOCK_BITS + 100
    bits = np.zeros(bitset_bytes(nbits), dtype=np.uint8)
    bits[::4099] = 0x5A
    return nbits, encode_bitset(bits, nbits)


def _raises(data, nbits=None, name=NAME):
    with pytest.raises(FormatError, match=re.escape(name)) as info:
        decode_file(data, name, nbits)
    return str(info.value)


def test_reject_block_count_wrong_for_nbits(two_block_file):
    nbits, data = two_block_file
    msg = _raises(data, 1234)
    assert "2 blocks" in msg and "1234 positions needs 1" in msg
    _raises(encode_bitset(b"\x01", 8), nbits)


def test_reject_zero_blocks():
    _raises(_header(0, [8]))


def test_reject_count_too_big_for_file(two_block_file):
    _, data = two_block_file
    msg = _raises(struct.pack("<I", 1000) + data[4:])
    assert "1000 blocks" in msg
    _raises(struct.pack("<I", 0xFFFFFFFF) + data[4:])


def test_reject_first_offset_wrong(two_block_file):
    _, data = two_block_file
    off = list(struct.unpack_from("<3I", data, 4))
    off[0] += 1
    _raises(data[:4] + struct.pack("<3I", *off) + data[16:])


def test_reject_offsets_not_increasing(two_block_file):
    _, data = two_block_file
    off = list(struct.unpack_from("<3I", data, 4))
    # An empty frame.
    _raises(data[:4] + struct.pack("<3I", off[0], off[0], off[2]) + data[16:])
    # Going backwards.
    _raises(data[:4] + struct.pack("<3I", off[0], off[2], off[1]) + data[16:])


def test_reject_last_offset_not_file_size(two_block_file):
    _, data = two_block_file
    msg = _raises(data + b"\x00")
    assert "last offset" in msg
    off = list(struct.unpack_from("<3I", data, 4))
    _raises(data[:4] + struct.pack("<3I", off[0], off[1], off[2] + 10) + data[16:])


def test_reject_truncated_file(two_block_file):
    nbits, data = two_block_file
    _raises(data[:-1], nbits)
    _raises(data[:20], nbits)


def test_reject_head_too_short():
    data = encode_bitset(b"\x00", 8)
    for cut in [0, 3, 4, 11]:
        with pytest.raises(FormatError, match=NAME):
            parse_header(data[:cut], len(data), NAME)
    assert parse_header(data + b"more", len(data), NAME).tolist() == [12, 157]


def test_reject_garbled_frame(two_block_file):
    _, data = two_block_file
    off = struct.unpack_from("<3I", data, 4)
    # Garbage where frame 1 starts (its magic number).
    bad = bytearray(data)
    bad[off[1] : off[1] + 4] = b"\x00\x01\x02\x03"
    msg = _raises(bytes(bad))
    assert "block 1" in msg
    # A frame cut short, with the offsets kept consistent.
    frames = [data[off[0] : off[1]], data[off[1] : off[2] - 5]]
    msg = _raises(build_file(frames))
    assert "block 1" in msg
    # A frame with trailing bytes inside its range.
    msg = _raises(build_file([data[off[0] : off[1]] + b"xx", data[off[1] : off[2]]]))
    assert "block 0" in msg
    # Corrupt bytes in the middle of a frame.
    bad = bytearray(data)
    for i in range(off[0] + 20, off[1] - 4, 7):
        bad[i] ^= 0xFF
    with pytest.raises(FormatError, match=NAME):
        decode_file(bytes(bad), NAME)


def test_reject_frame_of_wrong_content_size():
    small = zstandard.ZstdCompressor(level=19).compress(bytes(100))
    msg = _raises(build_file([small]), 8)
    assert "block 0" in msg
    # No content size recorded at all.
    unsized = zstandard.ZstdCompressor(level=19, write_content_size=False).compress(bytes(BLOCK_BYTES))
    _raises(build_file([unsized]), 8)
    with pytest.raises(FormatError, match="block 3"):
        decode_block(small, NAME, 3)


def test_build_file_rejects_past_4_gib():
    class Big(bytes):
        def __len__(self):
            return 2**32

    with pytest.raises(FormatError, match="4 GiB"):
        build_file([Big(b"x")])


def test_compress_block_from_many_threads():
    from concurrent.futures import ThreadPoolExecutor

    blocks = [bytes([i]) * (1000 * i + 1) for i in range(8)]
    with ThreadPoolExecutor(4) as pool:
        frames = list(pool.map(compress_block, blocks))
    assert frames == [compress_block(b) for b in blocks]
    for i, f in enumerate(frames):
        assert decode_block(f, NAME, i)[: len(blocks[i])] == blocks[i]
