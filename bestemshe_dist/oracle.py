"""Ask a tablebase about positions: value, distance, every move, the best move.

    tb = Tablebase.open("s3://bucket/tablebase")     # or a folder, or https://host/base
    tb.probe("0 0 5 5 5 5 5 5 5 5 5 5")              # Probe(value='loss', dtz=None)

A probe reads one block per file it needs through fsspec ranged reads (local
files, s3://, http(s)://): each file's header once (cached), then only the
Zstandard frame that holds the position (SPEC.md, "The file format"), kept
decompressed in a least-recently-used cache bounded in bytes. Probes from several
threads at once are safe; two threads needing the same block fetch it once.

The variant comes from the folder's manifest.json; a folder without one (the
published dataset is a bare folder of .bin files) is the 50-stone game with
5 pits. Distance tables (layer_<k1>_<k2>_dtz.bin) are used where the manifest
lists them. The rank is the index inside the layer's own file: no offset for k1
(the seed client's defect, SPEC.md).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
import zstandard

from . import format as fmt
from . import rules
from .errors import FormatError, StoreError
from .position import Position
from .store import Store, manifest_key
from .tables import layer_file_name
from .variant import Variant

WIN, DRAW, LOSS = "win", "draw", "loss"
_FLIP = {WIN: LOSS, LOSS: WIN, DRAW: DRAW}

DEFAULT_CACHE_BYTES = 256 * 2**20   # 64 decompressed blocks
PUBLISHED = Variant(50, 5)          # what a folder without manifest.json holds


@dataclass(frozen=True)
class Probe:
    """The value for the side to move, and with a distance table the plies to the
    next capture or the end of the game under best play (None for draws)."""

    value: str
    dtz: int | None = None


@dataclass(frozen=True)
class Move:
    pit: int                  # the mover's pit, 0 .. pits - 1
    stones: int               # stones it held
    captured: int             # stones the move takes (0: no capture)
    ends_game: bool           # the mover wins at once
    child: Position | None    # the position after the move, from the opponent's side
    value: str                # the move's value for the mover (the child's, flipped)
    dtz: int | None           # plies from before the move to the next capture or the end,
                              # best play after it: 1 for a capture or a game end;
                              # None for a draw or without a distance table
    child_dtz: int | None     # the child's own stored distance (None: no table, a draw, or no child)

    @property
    def exits(self) -> bool:
        """Captures or ends the game: a distance phase ends here."""
        return self.ends_game or self.captured > 0


@dataclass(frozen=True)
class Choice:
    """The oracle's move. `guaranteed`: the move wins at once, or distances chose it
    (the winner takes the shortest win, the loser the longest loss), so that always
    playing the oracle's choice wins a won game."""

    move: Move
    guaranteed: bool
    reason: str

    @property
    def pit(self) -> int:
        return self.move.pit


@dataclass
class _File:
    name: str
    offsets: np.ndarray


class Tablebase:
    """A tablebase at any fsspec URL, read a block at a time (see the module doc)."""

    def __init__(self, url: str, storage_options: dict | None = None, *,
                 cache_bytes: int = DEFAULT_CACHE_BYTES):
        self.store = Store(url, storage_options)
        self.url = self.store.shown
        if self.store.local and not self.store.fs.isdir(self.store.root or "."):
            raise StoreError(f"cannot open {self.url}: it is not a folder.")
        self.manifest = self.store.read_manifest()
        if self.manifest is None:
            self.variant = PUBLISHED
            self._entries = None
        else:
            try:
                self.variant = Variant(**self.manifest["variant"])
            except Exception:
                raise StoreError(f"{self.url}/manifest.json names no valid variant.") from None
            self._entries = self.manifest["layers"]
        self.cache_bytes = int(cache_bytes)
        self._lock = threading.Lock()
        self._files: dict[str, _File] = {}
        self._blocks: OrderedDict = OrderedDict()
        self._block_bytes = 0
        self._pending: dict = {}
        self.requests = 0           # ranged reads of layer files
        self.bytes_fetched = 0      # bytes they returned
        self.cache_hits = 0

    @classmethod
    def open(cls, url: str, storage_options: dict | None = None, **kwargs) -> "Tablebase":
        return cls(url, storage_options, **kwargs)

    def __repr__(self):
        return f"Tablebase({self.url!r}, {self.variant.describe()})"

    # -- positions ------------------------------------------------------------------
    def position(self, values) -> Position:
        """Parse and validate `values` ("k1 k2 p0 .. p9", or a sequence) for this variant."""
        return Position.parse(values, self.variant)

    def has_distances(self, k1: int, k2: int) -> bool:
        return self._dtz_width(k1, k2) is not None

    # -- queries ------------------------------------------------------------------
    def probe(self, position) -> Probe:
        pos = self.position(position)
        k1, k2 = pos.layer
        index = pos.rank()
        npos = self.variant.layer_size(k1, k2)
        if self._bit(k1, k2, "win", npos, index):
            value = WIN
        elif self._bit(k1, k2, "draw", npos, index):
            value = DRAW
        else:
            value = LOSS
        dtz = None
        if value != DRAW:
            width = self._dtz_width(k1, k2)
            if width is not None:
                dtz = self._distance(k1, k2, width, npos, index)
        return Probe(value, dtz)

    def moves(self, position) -> list[Move]:
        """Every legal move (own pit with stones), with its value for the mover."""
        pos = self.position(position)
        board = pos.board()
        timed = self.has_distances(pos.k1, pos.k2)   # distances are given for this layer's moves
        out = []
        for pit in pos.legal_pits():
            played = rules.play(self.variant, pos.k1, pos.k2, board, pit)
            if played[0] == "win":
                out.append(Move(pit, pos.pits[pit], played[1], True, None, WIN, 1 if timed else None, None))
                continue
            _, (c1, c2, child_board), captured = played
            child = Position(c1, c2, tuple(int(x) for x in child_board), self.variant)
            seen = self.probe(child)
            value = _FLIP[seen.value]
            if value == DRAW or not timed:
                dtz = None
            elif captured:
                dtz = 1                  # the capture ends this count, whatever follows
            else:
                dtz = None if seen.dtz is None else seen.dtz + 1
            out.append(Move(pit, pos.pits[pit], captured, False, child, value, dtz, seen.dtz))
        return out

    def best_move(self, position) -> Choice | None:
        """A move that keeps the position's value; None when the mover has no move.

        With distance tables a winner takes the shortest win and a loser the longest
        loss (a capture or a game end counts as one ply and starts a new count), so
        play makes progress and a won game is won. Without them: a game-ending move,
        then the largest capture into a won position, then any value-preserving move;
        a won game is then not guaranteed to be converted.
        """
        pos = self.position(position)
        moves = self.moves(pos)
        if not moves:
            return None
        rank = {WIN: 0, DRAW: 1, LOSS: 2}
        value = min((m.value for m in moves), key=rank.__getitem__)
        keep = [m for m in moves if m.value == value]
        timed = value != DRAW and all(m.dtz is not None for m in keep)
        if value == WIN:
            ending = [m for m in keep if m.ends_game]
            if ending:
                best = max(ending, key=lambda m: (m.captured, -m.pit))
                return Choice(best, True, "wins at once")
            if timed:
                best = min(keep, key=lambda m: (m.dtz, -m.captured, m.pit))
                return Choice(best, True, f"shortest win: {plies(best.dtz)} to the next capture or the end")
            best = min(keep, key=lambda m: (-m.captured, m.pit))
            return Choice(best, False, "keeps the win; without distance tables conversion is not guaranteed")
        if value == LOSS:
            if timed:
                best = min(keep, key=lambda m: (-m.dtz, m.pit))
                return Choice(best, True, f"longest loss: {plies(best.dtz)} to the next capture or the end")
            best = min(keep, key=lambda m: (-m.captured, m.pit))
            return Choice(best, False, "every move loses; without distance tables the longest loss is unknown")
        best = min(keep, key=lambda m: (-m.captured, m.pit))
        return Choice(best, self.has_distances(pos.k1, pos.k2), "keeps the draw")

    # -- the files --------------------------------------------------------------------
    def _entry(self, k1: int, k2: int, kind: str) -> dict | None:
        """The manifest entry of a layer; a layer it lacks is a missing file."""
        if self._entries is None:
            return None
        entry = self._entries.get(manifest_key(k1, k2))
        if entry is None:
            raise StoreError(
                f"{self.url}/{layer_file_name(k1, k2, kind)} is missing: layer {k1}_{k2} "
                f"is not in this tablebase (its manifest lists {len(self._entries)} layers)."
            )
        return entry

    def _dtz_width(self, k1: int, k2: int) -> int | None:
        entry = self._entries.get(manifest_key(k1, k2)) if self._entries is not None else None
        if not entry or not isinstance(entry.get("dtz"), dict):
            return None
        return int(entry["dtz"]["bytes_per_position"])

    def _bit(self, k1, k2, kind, npos, index) -> int:
        raw = self._block(k1, k2, kind, npos, index // fmt.BLOCK_BITS)
        offset = index % fmt.BLOCK_BITS
        return (raw[offset >> 3] >> (offset & 7)) & 1

    def _distance(self, k1, k2, width, npos, index) -> int:
        at = index * width          # width 1 or 2 divides BLOCK_BYTES: never split
        raw = self._block(k1, k2, "dtz", npos, at // fmt.BLOCK_BYTES, width)
        offset = at % fmt.BLOCK_BYTES
        return int.from_bytes(raw[offset:offset + width], "little")

    def _block(self, k1, k2, kind, npos, block, width=None) -> bytes:
        name = layer_file_name(k1, k2, kind)
        return self._once(("block", name, block),
                          lambda: self._load_block(k1, k2, kind, npos, block, width))

    def _load_block(self, k1, k2, kind, npos, block, width) -> bytes:
        name = layer_file_name(k1, k2, kind)
        info = self._once(("file", name), lambda: self._load_header(k1, k2, kind, npos, width))
        start, end = int(info.offsets[block]), int(info.offsets[block + 1])
        frame = self._read(name, start, end)
        # Only the bytes that hold positions: the rest of a layer's last block is padding,
        # and a small layer's whole table is a few bytes of its one 4 MiB block.
        nbytes = fmt.bitset_bytes(npos if kind != "dtz" else 8 * width * npos)
        return _decode_prefix(frame, self._shown(name), block, min(fmt.BLOCK_BYTES, nbytes - block * fmt.BLOCK_BYTES))

    def _load_header(self, k1, k2, kind, npos, width) -> _File:
        name = layer_file_name(k1, k2, kind)
        entry = self._entry(k1, k2, kind)
        nbits = npos if kind != "dtz" else 8 * width * npos
        if entry is not None and isinstance(entry.get("bytes"), dict) and kind in entry["bytes"]:
            size = int(entry["bytes"][kind])
        else:
            size = self.store.size(name)
        # The block count follows from the layer's size, so the whole header is one read.
        hsize = fmt.header_size(fmt.blocks_for_bits(nbits))
        head = self._read(name, 0, min(size, hsize))
        return _File(name, fmt.parse_header(head, size, self._shown(name), nbits))

    def _read(self, name: str, start: int, end: int) -> bytes:
        """Bytes start..end of a file, through fsspec's ranged read."""
        data = self.store.read_range(name, start, end)
        if len(data) != end - start:
            if start > 0 and len(data) >= end:
                data = data[start:end]      # a server that ignores Range sends the whole file
            else:
                raise FormatError(
                    f"{self._shown(name)}: file is cut short, bytes {start}..{end} are past its end "
                    f"(read {len(data)} of {end - start})."
                )
        with self._lock:
            self.requests += 1
            self.bytes_fetched += len(data)
        return data

    def _shown(self, name: str) -> str:
        return f"{self.url}/{name}"

    # -- the caches ----------------------------------------------------------------------
    def _once(self, key, load):
        """The cached value of `key`, loading it in one thread only."""
        with self._lock:
            if key in self._files:
                return self._files[key]
            if key in self._blocks:
                self._blocks.move_to_end(key)
                self.cache_hits += 1
                return self._blocks[key]
            future = self._pending.get(key)
            owner = future is None
            if owner:
                future = self._pending[key] = Future()
        if not owner:
            return future.result()
        try:
            value = load()
        except BaseException as exc:
            with self._lock:
                del self._pending[key]
            future.set_exception(exc)
            raise
        with self._lock:
            del self._pending[key]
            if key[0] == "file":
                self._files[key] = value
            else:
                self._blocks[key] = value
                self._block_bytes += len(value)
                while self._block_bytes > self.cache_bytes and self._blocks:
                    _, old = self._blocks.popitem(last=False)
                    self._block_bytes -= len(old)
        future.set_result(value)
        return value

    @property
    def cached_bytes(self) -> int:
        return self._block_bytes

    def stats(self) -> dict:
        with self._lock:
            return {"requests": self.requests, "bytes_fetched": self.bytes_fetched,
                    "cache_hits": self.cache_hits, "cached_blocks": len(self._blocks),
                    "cached_bytes": self._block_bytes}


_local = threading.local()


def _decode_prefix(frame: bytes, name: str, index: int, needed: int) -> bytes:
    """The first `needed` bytes of a block: the whole block through format.decode_block
    (every check), or a prefix streamed out of a frame whose header is checked."""
    if needed >= fmt.BLOCK_BYTES:
        return fmt.decode_block(frame, name, index)
    bad = f"{name}: block {index} is not a valid Zstandard frame of 4 MiB"
    try:
        size = zstandard.get_frame_parameters(frame).content_size
    except zstandard.ZstdError as e:
        raise FormatError(f"{bad} ({e}).") from None
    if size != fmt.BLOCK_BYTES:
        shown = "not recorded" if size == zstandard.CONTENTSIZE_UNKNOWN else f"{size} bytes"
        raise FormatError(f"{bad} (its content size is {shown}).")
    dctx = getattr(_local, "dctx", None)
    if dctx is None:
        dctx = _local.dctx = zstandard.ZstdDecompressor()
    parts, got = [], 0
    try:
        with dctx.stream_reader(frame, read_across_frames=False) as reader:
            while got < needed:
                part = reader.read(needed - got)
                if not part:
                    break
                parts.append(part)
                got += len(part)
    except zstandard.ZstdError as e:
        raise FormatError(f"{bad} ({e}).") from None
    if got < needed:
        raise FormatError(f"{bad} (it decompresses to {got} bytes).")
    return b"".join(parts)


def plies(n: int) -> str:
    return f"{n} ply" if n == 1 else f"{n} plies"


# -- what `bestemshe-dist probe` prints ---------------------------------------------------
def report(tb: Tablebase, position) -> dict:
    """A position's value, distance, every move and the best move, as plain JSON data."""
    pos = tb.position(position)
    seen = tb.probe(pos)
    moves = tb.moves(pos)
    choice = tb.best_move(pos)
    return {
        "position": str(pos),
        "variant": tb.variant.as_dict(),
        "k1": pos.k1, "k2": pos.k2, "pits": list(pos.pits),
        "rank": pos.rank(),
        "value": seen.value,
        "dtz": seen.dtz,
        "distances": tb.has_distances(pos.k1, pos.k2),
        "moves": [{
            "pit": m.pit, "stones": m.stones, "captured": m.captured, "ends_game": m.ends_game,
            "child": str(m.child) if m.child is not None else None,
            "value": m.value, "dtz": m.dtz, "child_dtz": m.child_dtz,
        } for m in moves],
        "best_move": choice.pit if choice else None,
        "best_move_reason": choice.reason if choice else "no move: the side to move has lost",
        "conversion_guaranteed": bool(choice and choice.guaranteed),
    }


def _value_text(value: str, dtz) -> str:
    return value if dtz is None else f"{value} in {plies(dtz)}"


def format_report(data: dict) -> str:
    v = data["variant"]
    lines = [
        f"position  {data['position']}   (layer {data['k1']}_{data['k2']}, rank {data['rank']:,}; "
        f"{v['stones']} stones, {v['pits']} pits per side)",
        f"value     {_value_text(data['value'], data['dtz'])} for the side to move"
        + ("" if data["dtz"] is None else " (plies to the next capture or the end)")
        + ("" if data["distances"] else "  [no distance table]"),
        "moves" if data["moves"] else "moves     none: the side to move has no stone to sow and has lost",
    ]
    for m in data["moves"]:
        what = "ends the game" if m["ends_game"] else f"-> {m['child']}"
        took = f", captures {m['captured']}" if m["captured"] else ""
        stones = f"{m['stones']} stone" + ("s" if m["stones"] != 1 else "")
        lines.append(f"  pit {m['pit']}  {_value_text(m['value'], m['dtz']):<16} {what}   ({stones}{took})")
    if data["best_move"] is not None:
        lines.append(f"best      pit {data['best_move']}: {data['best_move_reason']}")
    return "\n".join(lines)
