"""Read a tablebase's layer files: a block at a time (the oracle, verify --sample)
or whole (the solver's dependency layers, the verifier), every block checked
against its layer's checksums before a bit of it is used.

A block read fetches each file's header once (one ranged read: the block count
follows from the layer's size), then only the Zstandard frame that holds the
position, through fsspec (local files, s3://, http(s)://). Headers and
checksums stay cached; decompressed blocks sit in an LRU cache bounded in bytes.

Checksums (checksums.py): a layer whose manifest entry records them must have
its sidecar, and a missing one is a fault; without such a record (an older
tablebase, or the published one, a bare folder) the sidecar is used when it is
there, and otherwise the layer's answers are *unverified*, which `verified()`
says.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Literal, TypeAlias, overload

import numpy as np
import numpy.typing as npt

from ..errors import FormatError, StoreError
from ..game.variant import Variant
from ..naming import counted, layer_file, layer_name, sums_file
from ..solve.code_arrays import Codes
from . import format as fmt
from .cache import OnceCache
from .checksums import FileSums, LayerSums
from .layer_files import codes_from_bitsets
from .store import Store

Ranks: TypeAlias = npt.NDArray[np.integer[Any]]


def table_bits(kind: str, npos: int, width: int | None = None) -> int:
    """Bits of a layer's table: one per position for win and draw, 8 * width for dtz."""
    if kind != "dtz":
        return npos
    if width is None:
        raise TypeError("the bits of a dtz table depend on its width, and none was given")
    return 8 * width * npos


class LayerReader:
    """A tablebase's files, read and checked; safe to use from many threads."""

    def __init__(
        self,
        store: Store,
        manifest: dict[str, Any] | None = None,
        cache_bytes: int | None = 256 << 20,
        listed_only: bool = True,
        require_sums: bool | None = None,
    ) -> None:
        """`listed_only`: with a manifest, a layer it does not list is missing (the
        oracle); without it such a layer's files are read all the same (the verifier,
        which reports the missing entry on its own). `require_sums`: whether every
        layer must have checksums; None: those whose manifest entry records them."""
        self.store = store
        self.entries: dict[str, Any] | None = manifest["layers"] if manifest is not None else None
        self.listed_only = listed_only
        self.require_sums = require_sums
        self._meta = OnceCache()  # headers and checksums: small, kept
        self._blocks = OnceCache(cache_bytes)  # decompressed blocks
        self._lock = threading.Lock()
        self.requests = 0  # reads of layer files and their checksum files
        self.bytes_fetched = 0  # bytes they returned

    def shown(self, name: str) -> str:
        return f"{self.store.shown}/{name}"

    # -- what the manifest says ----------------------------------------------------------
    def entry(self, k1: int, k2: int, kind: str = "win") -> dict[str, Any] | None:
        """The layer's manifest entry (None without a manifest); a layer the manifest
        lacks is a missing file."""
        if self.entries is None:
            return None
        entry: dict[str, Any] | None = self.entries.get(layer_name(k1, k2))
        if entry is None and self.listed_only:
            raise StoreError(
                f"{self.shown(layer_file(k1, k2, kind))} is missing: layer {layer_name(k1, k2)} "
                f"is not in this tablebase (its manifest lists {counted(len(self.entries), 'layer')})."
            )
        return entry

    def dtz_width(self, k1: int, k2: int) -> int | None:
        entry = self.entries.get(layer_name(k1, k2)) if self.entries is not None else None
        if not entry or not isinstance(entry.get("dtz"), dict):
            return None
        return int(entry["dtz"]["bytes_per_position"])

    # -- checksums -------------------------------------------------------------------------
    def sums(self, k1: int, k2: int) -> LayerSums | None:
        """The layer's checksums, or None when it has none (unverified)."""
        return self._meta.get(("sums", k1, k2), lambda: (self._load_sums(k1, k2), 0))

    def verified(self, k1: int, k2: int) -> bool:
        return self.sums(k1, k2) is not None

    def _load_sums(self, k1: int, k2: int) -> LayerSums | None:
        entry = self.entry(k1, k2)
        required = self.require_sums
        if required is None:
            required = bool(entry and entry.get("checksums"))
        name = sums_file(k1, k2)
        raw = self._fetch(name, None, None, optional=True)
        if raw is None:
            if required:
                raise FormatError(
                    f"{self.shown(name)} is missing, but layer {layer_name(k1, k2)} was written with "
                    "checksums: its blocks cannot be checked, so nothing is read from them."
                )
            return None
        return LayerSums.from_bytes(raw, (k1, k2), self.shown(name))

    def file_sums(self, k1: int, k2: int, kind: str) -> FileSums | None:
        sums = self.sums(k1, k2)
        return None if sums is None else sums.of(kind, self.shown(layer_file(k1, k2, kind)))

    # -- a block at a time ---------------------------------------------------------------------
    def header(self, k1: int, k2: int, kind: str, nbits: int) -> npt.NDArray[np.int64]:
        """The file's validated block offsets (checked against its checksums)."""
        return self._meta.get(("header", k1, k2, kind), lambda: (self._load_header(k1, k2, kind, nbits), 0))

    def _load_header(self, k1: int, k2: int, kind: str, nbits: int) -> npt.NDArray[np.int64]:
        name = layer_file(k1, k2, kind)
        sums = self.file_sums(k1, k2, kind)
        entry = self.entry(k1, k2, kind)
        if sums is not None:
            size = sums.size
        elif entry is not None and isinstance(entry.get("bytes"), dict) and kind in entry["bytes"]:
            size = int(entry["bytes"][kind])
        else:
            size = self.store.size(name)
        head = self._fetch(name, 0, min(size, fmt.header_size(fmt.blocks_for_bits(nbits))), what="its header")
        if sums is not None:
            sums.check_header(head, size, self.shown(name))
        return fmt.parse_header(head, size, self.shown(name), nbits)

    def block(self, k1: int, k2: int, kind: str, nbits: int, index: int) -> bytes:
        """The raw bytes of block `index` that hold positions (a small layer's one
        block, or the last one, is mostly padding, which is never inflated)."""
        return self._blocks.get((k1, k2, kind, index), lambda: self._load_block(k1, k2, kind, nbits, index))

    def read_block(self, k1: int, k2: int, kind: str, nbits: int, index: int) -> bytes:
        """block(), read and checked again rather than cached (a reader of a
        layer's blocks in order, each once)."""
        return self._load_block(k1, k2, kind, nbits, index)[0]

    def _load_block(self, k1: int, k2: int, kind: str, nbits: int, index: int) -> tuple[bytes, int]:
        name = layer_file(k1, k2, kind)
        offsets = self.header(k1, k2, kind, nbits)
        frame = self._fetch(name, int(offsets[index]), int(offsets[index + 1]), what=f"block {index}")
        sums = self.file_sums(k1, k2, kind)
        if sums is not None:
            sums.check_frame(index, frame, self.shown(name))
        needed = min(fmt.BLOCK_BYTES, fmt.bitset_bytes(nbits) - index * fmt.BLOCK_BYTES)
        raw = fmt.decode_block(frame, self.shown(name), index, needed)
        return raw, len(raw)

    def bit(self, k1: int, k2: int, kind: str, npos: int, rank: int) -> int:
        raw = self.block(k1, k2, kind, npos, rank // fmt.BLOCK_BITS)
        offset = rank % fmt.BLOCK_BITS
        return (raw[offset >> 3] >> (offset & 7)) & 1

    def distance(self, k1: int, k2: int, width: int, npos: int, rank: int) -> int:
        at = rank * width  # width 1 or 2 divides BLOCK_BYTES: never split
        raw = self.block(k1, k2, "dtz", table_bits("dtz", npos, width), at // fmt.BLOCK_BYTES)
        offset = at % fmt.BLOCK_BYTES
        return int.from_bytes(raw[offset : offset + width], "little")

    # -- many positions at once (sorted ranks: each block read once) ----------------------------
    def bits(self, k1: int, k2: int, kind: str, npos: int, ranks: Ranks) -> npt.NDArray[np.uint8]:
        """The bits of sorted ranks in one file, each block read once."""
        out = np.empty(ranks.shape[0], np.uint8)
        blocks = ranks // fmt.BLOCK_BITS
        for a, b in runs(blocks):
            raw = np.frombuffer(self.block(k1, k2, kind, npos, int(blocks[a])), np.uint8)
            offset = ranks[a:b] - int(blocks[a]) * fmt.BLOCK_BITS
            out[a:b] = (raw[offset >> 3] >> (offset & 7).astype(np.uint8)) & 1
        return out

    def distances(self, k1: int, k2: int, width: int, npos: int, ranks: Ranks) -> npt.NDArray[np.int32]:
        """The stored distances of sorted ranks, each block of the table read once."""
        out = np.empty(ranks.shape[0], np.int32)
        at = ranks * width  # width 1 or 2 divides BLOCK_BYTES: never split
        blocks = at // fmt.BLOCK_BYTES
        for a, b in runs(blocks):
            raw = np.frombuffer(
                self.block(k1, k2, "dtz", table_bits("dtz", npos, width), int(blocks[a])), np.uint8
            )
            offset = at[a:b] - int(blocks[a]) * fmt.BLOCK_BYTES
            out[a:b] = raw[offset] if width == 1 else raw[offset] | (raw[offset + 1].astype(np.int32) << 8)
        return out

    def distance_range(
        self, k1: int, k2: int, width: int, npos: int, lo: int, n: int
    ) -> npt.NDArray[np.unsignedinteger[Any]]:
        """The stored distances of positions [lo, lo + n), from the dtz blocks that
        hold them (a slice of their bytes: for a block of positions, 32 or 64 MiB,
        where ranks and gathers would take 0.8 GB)."""
        nbits = table_bits("dtz", npos, width)
        first, last = lo * width // fmt.BLOCK_BYTES, ((lo + n) * width - 1) // fmt.BLOCK_BYTES
        raw = np.concatenate(
            [np.frombuffer(self.block(k1, k2, "dtz", nbits, b), np.uint8) for b in range(first, last + 1)]
        )
        start = lo * width - first * fmt.BLOCK_BYTES
        return raw[start : start + n * width].view("<u1" if width == 1 else "<u2")

    # -- whole files -----------------------------------------------------------------------------
    def table(self, k1: int, k2: int, kind: str, nbits: int) -> npt.NDArray[np.uint8]:
        """A whole file decoded (bitset_bytes(nbits) bytes), every frame checked first."""
        name = layer_file(k1, k2, kind)
        sums = self.file_sums(k1, k2, kind)
        return fmt.decode_file(self._fetch(name, None, None), self.shown(name), nbits, sums)

    def codes(self, k1: int, k2: int, npos: int, out: Codes | None = None) -> Codes:
        """The layer's 2-bit codes from its win and draw files. Given `out` (a
        layer's worth of words, e.g. a slot of host memory) they are unpacked into
        it a block at a time, so nothing layer-sized is allocated on the way."""
        if out is None:
            win = self.table(k1, k2, "win", npos)
            draw = self.table(k1, k2, "draw", npos)
            return codes_from_bitsets(win, draw, npos, k1, k2)
        words_per_block = fmt.BLOCK_BITS // 32
        for block in range(fmt.blocks_for_bits(npos)):
            first = block * words_per_block
            part = out[first : min(first + words_per_block, out.shape[0])]
            win = np.frombuffer(self.block(k1, k2, "win", npos, block), np.uint8)
            draw = np.frombuffer(self.block(k1, k2, "draw", npos, block), np.uint8)
            codes_from_bitsets(win, draw, npos, k1, k2, out=part, first_word=first)
        return out

    # -- I/O -----------------------------------------------------------------------------------------
    @overload
    def _fetch(
        self,
        name: str,
        start: int | None,
        end: int | None,
        optional: Literal[False] = False,
        what: str = "the bytes",
    ) -> bytes: ...
    @overload
    def _fetch(
        self, name: str, start: int | None, end: int | None, optional: bool = False, what: str = "the bytes"
    ) -> bytes | None: ...
    def _fetch(
        self, name: str, start: int | None, end: int | None, optional: bool = False, what: str = "the bytes"
    ) -> bytes | None:
        """A whole file (start None) or bytes start..end (`what` they are, for the
        error), through fsspec; None for a missing optional file."""
        if start is None:
            data = self.store.read_optional(name) if optional else self.store.read_bytes(name)
        else:
            if end is None:
                raise TypeError(f"a ranged read of {self.shown(name)} needs its end")
            data = self.store.read_range(name, start, end)
            if len(data) != end - start:
                if start > 0 and len(data) >= end:
                    data = data[start:end]  # a server that ignores Range sends the whole file
                else:
                    raise FormatError(
                        f"{self.shown(name)}: the file is cut short, {what} (bytes {start}..{end}) lies past "
                        f"its end (read {len(data)} of {end - start} bytes)."
                    )
        with self._lock:
            self.requests += 1
            self.bytes_fetched += len(data) if data is not None else 0
        return data

    def stats(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "bytes_fetched": self.bytes_fetched,
            "cache_hits": self._blocks.hits,
            "cached_blocks": len(self._blocks),
            "cached_bytes": self._blocks.nbytes,
        }

    @property
    def cached_bytes(self) -> int:
        return self._blocks.nbytes


def read_layer_codes(store: Store, variant: Variant, k1: int, k2: int, out: Codes | None = None) -> Codes:
    """A whole layer's 2-bit codes from a tablebase this project wrote (into `out`
    when given), every frame checked against the layer's checksums, which must be
    there (the solver's dependency layers: every layer it publishes, or keeps on
    resuming, has them)."""
    reader = LayerReader(store, None, cache_bytes=0, require_sums=True)
    return reader.codes(k1, k2, variant.layer_size(k1, k2), out)


def runs(sorted_keys: npt.NDArray[Any]) -> list[tuple[int, int]]:
    """(start, end) of each run of equal values in a sorted array."""
    if sorted_keys.shape[0] == 0:
        return []
    edges = np.flatnonzero(np.diff(sorted_keys)) + 1
    bounds = [0, *edges.tolist(), int(sorted_keys.shape[0])]
    return list(itertools.pairwise(bounds))
