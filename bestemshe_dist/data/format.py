"""The block-compressed bitset format of a layer file (SPEC.md, "The file format").

Bytes in, bytes out: callers do the file or network I/O. A file is

    u32 num_blocks                 little-endian
    u32 offsets[num_blocks + 1]    absolute; offsets[0] = header size, offsets[-1] = file size
    frame 0, frame 1, ...          one Zstandard frame per 4 MiB block of the raw bitset

Everything read from a file is validated before it is trusted, and every fault
is a FormatError whose one sentence names the file and what is wrong.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import numpy.typing as npt
import zstandard

from bestemshe_dist.errors import FormatError

if TYPE_CHECKING:
    from .checksums import FileSums  # checksums imports this module

# Bytes as the functions here read them: any contiguous buffer (a file's bytes, a
# slice of them without a copy), and for the raw bits also a numpy array.
ByteView: TypeAlias = bytes | bytearray | memoryview
RawBits: TypeAlias = ByteView | npt.NDArray[Any]

BLOCK_BYTES = 4_194_304
BLOCK_BITS = 33_554_432
ZSTD_LEVEL = 19

# Offsets are u32, so no byte of a file may lie at or past 4 GiB.
_MAX_FILE_SIZE = 2**32 - 1

# Compressors and decompressors are not safe to share between threads, and
# callers compress blocks from several threads at once (zstandard releases the
# GIL), so each thread gets its own.
_local = threading.local()


def _compressor(level: int) -> zstandard.ZstdCompressor:
    held: dict[int, zstandard.ZstdCompressor] = _local.__dict__.setdefault("compressors", {})
    c = held.get(level)
    if c is None:
        # Content size in the frame header, no checksum: what the published files hold.
        c = held[level] = zstandard.ZstdCompressor(level=level, write_content_size=True, write_checksum=False)
    return c


def _decompressor() -> zstandard.ZstdDecompressor:
    d = getattr(_local, "decompressor", None)
    if d is None:
        d = zstandard.ZstdDecompressor()
        _local.decompressor = d
    return d


def _blocks(n: int) -> str:
    return f"{n} block" if n == 1 else f"{n} blocks"


def bitset_bytes(nbits: int) -> int:
    """Bytes of the raw bitset for `nbits` positions: ceil(nbits / 8)."""
    return (nbits + 7) // 8


def blocks_for_bits(nbits: int) -> int:
    """Blocks in a layer of `nbits` positions; a layer always has at least one."""
    return max(1, (nbits + BLOCK_BITS - 1) // BLOCK_BITS)


def header_size(num_blocks: int) -> int:
    """Bytes of the header: the count plus num_blocks + 1 offsets."""
    return 4 + 4 * (num_blocks + 1)


def header_bytes_needed(head4: ByteView, name: str = "layer file", file_size: int | None = None) -> int:
    """How many bytes the whole header takes, from the file's first 4 bytes.

    For ranged readers: fetch 4 bytes, then this many. With `file_size`, a count
    the file cannot hold is refused here, before anything large is fetched.
    """
    if len(head4) < 4:
        raise FormatError(
            f"{name}: file is cut short, it has {len(head4)} bytes but the block count needs 4."
        )
    num_blocks = int.from_bytes(bytes(head4[:4]), "little")
    needed = header_size(num_blocks)
    if file_size is not None and needed > file_size:
        raise FormatError(
            f"{name}: header says {_blocks(num_blocks)}, which needs {needed} bytes, "
            f"but the file is {file_size} bytes."
        )
    return needed


def _as_bytes_view(raw: RawBits) -> memoryview:
    if isinstance(raw, np.ndarray):
        # .data, the array's own memoryview: numpy declares no buffer protocol before 3.12
        return np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1).data.cast("B")
    return memoryview(raw).cast("B")


def compress_block(raw: RawBits, level: int = ZSTD_LEVEL) -> bytes:
    """One Zstandard frame of one block; `raw` (at most BLOCK_BYTES) is zero-padded
    to BLOCK_BYTES. `level`: the published files' (19) unless the file is this
    project's own (the distance files: DTZ_LEVEL)."""
    view = _as_bytes_view(raw)
    if len(view) > BLOCK_BYTES:
        raise ValueError(f"a block holds at most {BLOCK_BYTES} bytes, got {len(view)}")
    if len(view) < BLOCK_BYTES:
        # Only the last block of a layer is short; the spec pads it with zeros.
        padded = bytearray(BLOCK_BYTES)
        padded[: len(view)] = view
        view = memoryview(padded)
    return _compressor(level).compress(view)


def build_file(frames: list[bytes]) -> bytes:
    """Header plus the frames, in order."""
    if not frames:
        raise ValueError("a layer file has at least one block")
    num_blocks = len(frames)
    offsets = np.empty(num_blocks + 1, dtype=np.int64)
    offsets[0] = header_size(num_blocks)
    offsets[1:] = offsets[0] + np.cumsum([len(f) for f in frames], dtype=np.int64)
    if offsets[-1] > _MAX_FILE_SIZE:
        raise FormatError(
            f"layer file would be {int(offsets[-1])} bytes, past the 4 GiB its 32-bit offsets can address."
        )
    header = num_blocks.to_bytes(4, "little") + offsets.astype("<u4").tobytes()
    return b"".join([header, *frames])


def compress_blocks(raw: RawBits, threads: int = 1, level: int = ZSTD_LEVEL) -> list[bytes]:
    """The frames of `raw` cut into blocks (the last one zero-padded): the one way
    bits become frames, for whole layer files and for a large layer's groups of
    blocks alike. On `threads` threads when there are several blocks (zstandard
    releases the GIL, and level 19 is most of what publishing costs)."""
    view = _as_bytes_view(raw)
    blocks = [view[i : i + BLOCK_BYTES] for i in range(0, len(view), BLOCK_BYTES)] or [view]
    if threads > 1 and len(blocks) > 1:
        with ThreadPoolExecutor(min(threads, len(blocks))) as pool:
            return list(pool.map(lambda b: compress_block(b, level), blocks))
    return [compress_block(b, level) for b in blocks]


def encode_bitset(bits: RawBits, nbits: int, threads: int = 1, level: int = ZSTD_LEVEL) -> bytes:
    """The file for a raw bitset of `nbits` positions (bytes past the bitset are ignored)."""
    nbytes = bitset_bytes(nbits)
    view = _as_bytes_view(bits)
    if len(view) < nbytes:
        raise ValueError(f"a bitset of {nbits} bits needs {nbytes} bytes, got {len(view)}")
    view = view[:nbytes]
    if nbits % 8 and view[-1] >> (nbits % 8):
        # Bits past nbits name no position; the files hold them as zero (the last
        # block is copied to clear them, the rest is compressed in place).
        last = (nbytes - 1) // BLOCK_BYTES * BLOCK_BYTES
        tail = bytearray(view[last:])
        tail[-1] &= (1 << (nbits % 8)) - 1
        head = compress_blocks(view[:last], threads, level) if last else []
        return build_file(head + compress_blocks(tail, level=level))
    return build_file(compress_blocks(view, threads, level))


def parse_header(
    head: ByteView, file_size: int, name: str, nbits: int | None = None
) -> npt.NDArray[np.int64]:
    """Validated offsets (int64, num_blocks + 1) from the start of a file of `file_size` bytes."""
    num_blocks = int.from_bytes(bytes(head[:4]), "little") if len(head) >= 4 else None
    if num_blocks is None:
        raise FormatError(f"{name}: file is cut short, it has {len(head)} bytes but the block count needs 4.")
    if num_blocks < 1:
        raise FormatError(f"{name}: header says 0 blocks but a layer file has at least 1.")
    if nbits is not None:
        need = blocks_for_bits(nbits)
        if num_blocks != need:
            raise FormatError(
                f"{name}: header says {_blocks(num_blocks)} but a layer of {nbits} positions needs {need}."
            )
    else:
        # Every frame takes at least one byte, so the file size bounds the count.
        most = max(0, (file_size - header_size(0)) // 5)
        if num_blocks > most:
            raise FormatError(
                f"{name}: header says {_blocks(num_blocks)} "
                f"but a file of {file_size} bytes can hold at most {most}."
            )
    hsize = header_size(num_blocks)
    if len(head) < hsize:
        raise FormatError(
            f"{name}: header of {_blocks(num_blocks)} needs {hsize} bytes but the file has only {len(head)}."
        )
    offsets = np.frombuffer(bytes(head[4:hsize]), dtype="<u4").astype(np.int64)
    if offsets[0] != hsize:
        raise FormatError(
            f"{name}: first frame offset is {int(offsets[0])} "
            f"but the header of {_blocks(num_blocks)} ends at {hsize}."
        )
    steps = np.diff(offsets)
    if (steps <= 0).any():
        b = int(np.argmax(steps <= 0))
        raise FormatError(
            f"{name}: offsets are not strictly increasing at block {b} "
            f"({int(offsets[b])} then {int(offsets[b + 1])})."
        )
    if offsets[-1] != file_size:
        raise FormatError(f"{name}: last offset is {int(offsets[-1])} but the file is {file_size} bytes.")
    return offsets


def frame_sizes(offsets: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Compressed size of each block."""
    # Two steps: with asarray nested in it, numpy's overloads of diff pick a datetime one.
    array = np.asarray(offsets, dtype=np.int64)
    return np.diff(array)


def decode_block(frame: ByteView, name: str, index: int, needed: int = BLOCK_BYTES) -> bytes:
    """The first `needed` raw bytes of a block (all BLOCK_BYTES by default).

    The frame must record a content size of 4 MiB; output is bounded before
    anything is allocated. A whole block is decompressed in one call, which also
    refuses data past the frame; a prefix (the bytes of a small layer, or of the
    last block before its padding) is streamed out and the rest never inflated.
    """
    bad = f"{name}: block {index} is not a valid Zstandard frame of 4 MiB"
    try:
        size = zstandard.get_frame_parameters(frame).content_size
    except zstandard.ZstdError as e:
        raise FormatError(f"{bad} ({e}).") from None
    if size != BLOCK_BYTES:
        shown = "not recorded" if size == zstandard.CONTENTSIZE_UNKNOWN else f"{size} bytes"
        raise FormatError(f"{bad} (its content size is {shown}).")
    try:
        if needed >= BLOCK_BYTES:
            # No extra data allowed: the frame must fill its offsets range exactly.
            raw = _decompressor().decompress(frame, max_output_size=BLOCK_BYTES, allow_extra_data=False)
        else:
            parts, got = [], 0
            with _decompressor().stream_reader(frame, read_across_frames=False) as reader:
                while got < needed:
                    part = reader.read(needed - got)
                    if not part:
                        break
                    parts.append(part)
                    got += len(part)
            raw = b"".join(parts)
    except zstandard.ZstdError as e:
        raise FormatError(f"{bad} ({e}).") from None
    if len(raw) != min(needed, BLOCK_BYTES):
        raise FormatError(f"{bad} (it decompresses to {len(raw)} bytes).")
    return raw


# A streamed file is read in ranges of about this many bytes: few requests to an
# object store, and nothing layer-sized held (the largest distance file is GBs).
STREAM_BYTES = 64 << 20


def stream_blocks(
    read_range: Callable[[int, int], bytes],
    size: int,
    name: str,
    nbits: int,
    sums: FileSums | None = None,
    hasher: Any = None,
) -> Iterator[tuple[int, bytes]]:
    """(index, raw bytes) of each block of a file of `size` bytes, in order, the
    first bitset_bytes(nbits) raw bytes in all, read through `read_range(start,
    end)` in ranges of about STREAM_BYTES; the header and every frame checked as
    decode_file checks them, and every byte of the file fed to `hasher` (a
    hashlib object) in order, so it ends holding the whole file's digest."""
    head = read_range(0, min(size, header_size(blocks_for_bits(nbits))))
    if sums is not None:
        sums.check_header(head, size, name)
    offsets = parse_header(head, size, name, nbits)
    if hasher is not None:
        hasher.update(head[: offsets[0]])
    total = bitset_bytes(nbits)
    num_blocks = len(offsets) - 1
    first = 0
    while first < num_blocks:
        last = first + 1  # blocks [first, last) in one read
        while last < num_blocks and offsets[last + 1] - offsets[first] <= STREAM_BYTES:
            last += 1
        data = memoryview(read_range(int(offsets[first]), int(offsets[last])))
        if len(data) != offsets[last] - offsets[first]:
            raise FormatError(f"{name}: file is cut short, block {last - 1} ends past its end.")
        if hasher is not None:
            hasher.update(data)
        for b in range(first, last):
            frame = data[offsets[b] - offsets[first] : offsets[b + 1] - offsets[first]]
            if sums is not None:
                sums.check_frame(b, frame, name)
            raw = decode_block(frame, name, b, min(BLOCK_BYTES, total - b * BLOCK_BYTES))
            if b == num_blocks - 1 and nbits % 8:
                # Bits past nbits name no position; cleared so counts stay exact.
                tail = bytearray(raw[-1:])
                tail[0] &= (1 << (nbits % 8)) - 1
                raw = raw[:-1] + bytes(tail)
            yield b, raw
        first = last


def decode_file(
    data: ByteView, name: str, nbits: int | None = None, sums: FileSums | None = None
) -> npt.NDArray[np.uint8]:
    """The raw bitset of a whole file: bitset_bytes(nbits) bytes, or every block when nbits is None.

    `sums` (a checksums.FileSums) checks the header and each frame before it is
    decoded, so no bit of a damaged block is ever used.
    """
    view = memoryview(data).cast("B")
    if sums is not None:
        sums.check_header(view, len(view), name)
    offsets = parse_header(view, len(view), name, nbits)
    num_blocks = len(offsets) - 1
    total = bitset_bytes(nbits) if nbits is not None else num_blocks * BLOCK_BYTES
    out = np.empty(total, dtype=np.uint8)
    for b in range(num_blocks):
        frame = view[offsets[b] : offsets[b + 1]]
        if sums is not None:
            sums.check_frame(b, frame, name)
        raw = decode_block(frame, name, b)
        start = b * BLOCK_BYTES
        n = min(BLOCK_BYTES, total - start)
        out[start : start + n] = np.frombuffer(raw, dtype=np.uint8, count=n)
    if nbits is not None and nbits % 8:
        # Bits past nbits name no position; clear them so counts stay exact.
        out[-1] &= (1 << (nbits % 8)) - 1
    return out
