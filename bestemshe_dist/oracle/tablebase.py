"""Ask a tablebase about positions: value, distance, every move, the best move.

    tb = Tablebase.open("s3://bucket/tablebase")     # or a folder, or https://host/base
    tb.probe("0 0 5 5 5 5 5 5 5 5 5 5")              # Probe(value='loss', dtz=None)

A probe reads one block per file it needs through fsspec ranged reads (local
files, s3://, http(s)://): each file's header once (cached), then only the
Zstandard frame that holds the position (SPEC.md, "The file format"), kept
decompressed in a least-recently-used cache bounded in bytes (blocks.py). Probes
from several threads at once are safe; two threads needing the same block fetch
it once. Every block is checked against its layer's checksums before it is used
(checksums.py); a tablebase without them answers, but `verified` says so. What
the oracle shows a person (analyse, best_move, the probe report, play) is also
checked against the position's own moves: a stored value its children
contradict is a FormatError naming the block, never an answer.

The variant comes from the folder's manifest.json; a folder without one (the
published dataset is a bare folder of .bin files) is the 50-stone game with
5 pits. Distance tables (layer_<k1>_<k2>_dtz.bin) are used where the manifest
lists them. The rank is the index inside the layer's own file: no offset for k1
(the seed client's defect, SPEC.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

from ..data import format as fmt
from ..data.blocks import LayerReader, runs
from ..data.store import Store, find_tablebase, store_patience
from ..errors import FormatError, StoreError, UsageError
from ..game import rules
from ..game.position import Position
from ..game.variant import Variant
from ..naming import WIN_FILE_GLOB, layer_file, layer_name, parse_layer_file, parse_layer_name

WIN, DRAW, LOSS = "win", "draw", "loss"
REPETITION, LIMIT = "repetition", "limit"  # how a mainline that is no game end stops
# what probe and play say of an answer read without checksums
UNVERIFIED = (
    "unverified: this tablebase has no checksums for the layers read, so a damaged block could "
    "go unnoticed (bestemshe-dist checksums URL writes them from a copy you trust)"
)
FLIP = {WIN: LOSS, LOSS: WIN, DRAW: DRAW}  # a value seen from the other side
VALUE_OF = {1: WIN, 0: DRAW, -1: LOSS}  # probe_many's numbers (and sample's, match's)
NUMBER_OF = {WIN: 1, DRAW: 0, LOSS: -1}  # and back: larger is better for the side to move

DEFAULT_CACHE_BYTES = 256 * 2**20  # 64 decompressed blocks
PUBLISHED = Variant(50, 5)  # what a folder without manifest.json holds
# Seconds a store that stops answering is waited for by a reader: it answers a
# person or an HTTP request (serve gives each 10 s), so a store gone for longer
# is one sentence (a 503 from serve), not a thread held for the solve's 120 s.
ORACLE_PATIENCE = 5.0

# What names one position (Position.parse validates it): text "k1 k2 p0 ..", its
# numbers (ints, or text of them) as a list, tuple or array, or a Position.
PositionLike: TypeAlias = "Position | str | Sequence[int | str] | NDArray[np.integer[Any]]"


@dataclass(frozen=True)
class Probe:
    """The value for the side to move, and with a distance table the plies to the
    next capture or the end of the game under best play (None for draws)."""

    value: str
    dtz: int | None = None


@dataclass(frozen=True)
class Probes:
    """probe_many's answer, one entry a position, in the order given: `value` 1
    (win), 0 (draw) or -1 (loss) for the side to move; `dtz` the stored distance,
    -1 where there is none (a draw, or a layer without a distance table)."""

    value: NDArray[np.int8]
    dtz: NDArray[np.int32]

    def __len__(self) -> int:
        return int(self.value.shape[0])

    def __getitem__(self, i: int) -> Probe:
        value = VALUE_OF[int(self.value[i])]
        return Probe(value, None if self.dtz[i] < 0 else int(self.dtz[i]))


@dataclass(frozen=True)
class Ply:
    """One ply of a mainline: the position before it, the move, and the value of
    the position after it for the side then to move (None after a game end)."""

    position: Position
    move: Move
    after: Probe | None


@dataclass(frozen=True)
class Mainline:
    """Perfect play from `start`: the plies, and how it ended: "win" or "loss" (the
    game's end, for the side to move at the start), "repetition" (a position came
    back: how a drawn game goes on), or "limit" (max_plies reached first)."""

    start: Position
    value: Probe
    plies: list[Ply]
    result: str


@dataclass(frozen=True)
class Move:
    """One legal move of a position and what it leads to: the pit (0-based), the
    stones it sows, what it captures, whether it wins at once, the child position
    (from the opponent's side) and the move's value and distance for the mover."""

    pit: int  # the mover's pit, 0 .. pits - 1
    stones: int  # stones it held
    captured: int  # stones the move takes (0: no capture)
    ends_game: bool  # the mover wins at once
    child: Position | None  # the position after the move, from the opponent's side
    value: str  # the move's value for the mover (the child's, flipped)
    dtz: int | None  # plies from before the move to the next capture or the end,
    # best play after it: 1 for a capture or a game end;
    # None for a draw or without a distance table
    child_dtz: int | None  # the child's own stored distance (None: no table, a draw, or no child)

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


class Tablebase:
    """A tablebase at any fsspec URL, read a block at a time (see the module doc)."""

    def __init__(
        self,
        url: str,
        storage_options: dict[str, Any] | None = None,
        *,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self.store = Store(url, storage_options, patience=min(store_patience(), ORACLE_PATIENCE))
        self.url = self.store.shown
        self.manifest = find_tablebase(self.store)
        if self.manifest is None:
            self.variant = PUBLISHED
        else:
            try:
                self.variant = Variant(**self.manifest["variant"])
            except Exception:
                raise StoreError(f"{self.url}/manifest.json names no valid variant.") from None
        self.cache_bytes = int(cache_bytes)
        self.reader = LayerReader(self.store, self.manifest, self.cache_bytes)
        self._layers: set[tuple[int, int]] | None = None
        self._layer_stats: dict[tuple[int, int], dict[str, Any]] = {}

    @classmethod
    def open(cls, url: str, storage_options: dict[str, Any] | None = None, **kwargs: Any) -> Tablebase:
        """The tablebase at `url`: a folder, any fsspec URL (`s3://bucket/prefix`) or an
        `http(s)://` base URL laid out like the published dataset. `storage_options`
        go to fsspec as they are; `cache_bytes=` bounds the decompressed blocks kept
        (default 256 MiB). A URL that holds no tablebase is a StoreError."""
        return cls(url, storage_options, **kwargs)

    def __repr__(self) -> str:
        return f"Tablebase({self.url!r}, {self.variant.describe()})"

    # -- positions ------------------------------------------------------------------
    def position(self, values: PositionLike) -> Position:
        """Parse and validate `values` ("k1 k2 p0 .. p9", or a sequence) for this variant."""
        return Position.parse(values, self.variant)

    def layers(self) -> set[tuple[int, int]] | None:
        """The layers this tablebase holds: the manifest's, or the layer files a
        folder lists; None where neither says (a bare http(s) URL cannot be listed)."""
        if self._layers is None:
            if self.manifest is not None:
                held = {parse_layer_name(key) for key in self.manifest.get("layers", {})}
                self._layers = {layer for layer in held if layer is not None}
            else:
                if not self.store.listable:
                    return None
                try:
                    names = self.store.list_names(WIN_FILE_GLOB)
                except StoreError:
                    return None
                self._layers = {parsed[:2] for parsed in map(parse_layer_file, names) if parsed}
        return self._layers

    def has_distances(self, k1: int, k2: int) -> bool:
        """Whether layer (k1, k2) has a distance table (solved with `--dtz`)."""
        return self.reader.dtz_width(k1, k2) is not None

    def verified(self, k1: int, k2: int) -> bool:
        """Whether the layer's blocks are checked against checksums (else its answers
        are unverified: a tablebase without checksum files, see `bestemshe-dist checksums`)."""
        return self.reader.verified(k1, k2)

    # -- queries ------------------------------------------------------------------
    def probe(self, position: PositionLike) -> Probe:
        """The stored value (and distance) of one position: its own blocks only, each
        checked against its checksum where the layer has them."""
        pos = self.position(position)
        k1, k2 = pos.layer
        index = pos.rank()
        npos = self.variant.layer_size(k1, k2)
        if self.reader.bit(k1, k2, "win", npos, index):
            value = WIN
        elif self.reader.bit(k1, k2, "draw", npos, index):
            value = DRAW
        else:
            value = LOSS
        dtz = None
        if value != DRAW:
            width = self.reader.dtz_width(k1, k2)
            if width is not None:
                dtz = self.reader.distance(k1, k2, width, npos, index)
        return Probe(value, dtz)

    def probe_many(self, positions: NDArray[np.integer[Any]] | Iterable[PositionLike]) -> Probes:
        """The values (and distances) of many positions in one pass: their ranks in
        one kernel call, then layer by layer, each block they touch read once.

        positions: an integer array of shape (N, 2 + 2 pits), rows `k1 k2 p0 ..`,
        or any iterable of positions `probe` takes. A row that is no position of
        this game is a UsageError naming the row, before anything is read."""
        rows = self.rows(positions)
        count = rows.shape[0]
        value = np.zeros(count, np.int8)
        dtz = np.full(count, -1, np.int32)
        if count == 0:
            return Probes(value, dtz)
        ranks = np.empty(count, np.int64)
        rules.rank_rows(np.ascontiguousarray(rows[:, 2:]), self.variant.binom, ranks)
        # Sorted by layer, then rank: each layer, and each block in it, is one slice.
        # (np.unique over rows and a mask per layer and block took 3x as long for 1M
        # positions of 30 layers.)
        key = rows[:, 0] * (self.variant.win_kazan + 1) + rows[:, 1]
        order = np.lexsort((ranks, key))
        key, ranks = key[order], ranks[order]
        found = np.zeros(count, np.int8)
        dist = np.full(count, -1, np.int32)
        for a, b in runs(key):
            k1, k2 = divmod(int(key[a]), self.variant.win_kazan + 1)
            npos = self.variant.layer_size(k1, k2)
            here = ranks[a:b]
            got = self.reader.bits(k1, k2, "win", npos, here).astype(np.int8)  # 1: a win
            rest = np.flatnonzero(got == 0)  # the draw file only where needed, as probe() reads it
            got[rest] = (
                self.reader.bits(k1, k2, "draw", npos, here[rest]).astype(np.int8) - 1
            )  # 0 draw, -1 loss
            found[a:b] = got
            width = self.reader.dtz_width(k1, k2)
            if width is not None:
                decided = np.flatnonzero(got != 0)
                dist[a + decided] = self.reader.distances(k1, k2, width, npos, here[decided])
        value[order] = found
        dtz[order] = dist
        return Probes(value, dtz)

    def rows(self, positions: NDArray[np.integer[Any]] | Iterable[PositionLike]) -> NDArray[np.int64]:
        """positions (what probe_many takes) as a validated (N, 2 + board) int64
        array; a row that is no position of this game is a UsageError naming it."""
        width = 2 + self.variant.board
        if not isinstance(positions, np.ndarray):
            return np.array([self._row(i, p) for i, p in enumerate(positions)], np.int64).reshape(-1, width)
        if (
            positions.ndim != 2
            or positions.shape[1] != width
            or not np.issubdtype(positions.dtype, np.integer)
        ):
            raise UsageError(
                f"positions: expected an integer array of shape (N, {width}) (k1 k2 "
                f"p0..p{self.variant.board - 1} a row), got {positions.dtype} {positions.shape}."
            )
        rows = positions.astype(np.int64, copy=False)
        kazans = rows[:, :2]
        bad = (
            (rows < 0).any(axis=1)
            | (kazans % 2 != 0).any(axis=1)
            | (kazans > self.variant.win_kazan - 2).any(axis=1)
            | (rows[:, 2:].sum(axis=1) != self.variant.stones - kazans.sum(axis=1))
        )
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            self._row(row, [int(x) for x in rows[row]])  # Position says what is wrong with it
        return rows

    def _row(self, i: int, given: PositionLike) -> tuple[int, ...]:
        """Position `given` as (k1, k2, p0, ..); what is wrong with it names row i."""
        try:
            p = self.position(given)
        except UsageError as exc:
            raise UsageError(f"positions: row {i}: {str(exc).removeprefix('position: ')}") from None
        return (p.k1, p.k2, *p.pits)

    def mainline(self, position: PositionLike, max_plies: int | None = None) -> Mainline:
        """Perfect play from `position` (best_move at every ply) to the end of the
        game, to a position seen before (a drawn game repeats), or to max_plies."""
        found: Analysis | None  # None: the position just played to is not analysed yet
        found = self.analyse(position)
        pos = first = found.position
        start = found.probe
        plies: list[Ply] = []
        seen = {first}
        while max_plies is None or len(plies) < max_plies:
            if found is None:
                found = self.analyse(pos)
            choice = found.best_move()
            if choice is None:  # no stone to sow: the side to move has lost
                return Mainline(first, start, plies, _end_for_start(len(plies), LOSS))
            move = choice.move
            if move.ends_game:
                plies.append(Ply(found.position, move, None))
                return Mainline(first, start, plies, _end_for_start(len(plies) - 1, WIN))
            # the child's own value, as moves() probed it
            plies.append(Ply(found.position, move, Probe(FLIP[move.value], move.child_dtz)))
            assert move.child is not None  # moves() gives a child to every move that does not end the game
            pos, found = move.child, None
            if pos in seen:
                return Mainline(first, start, plies, REPETITION)
            seen.add(pos)
        return Mainline(first, start, plies, LIMIT)

    def moves(self, position: PositionLike) -> list[Move]:
        """Every legal move (own pit with stones), with its value for the mover."""
        pos = self.position(position)
        board = pos.board()
        timed = self.has_distances(pos.k1, pos.k2)  # distances are given for this layer's moves
        out: list[Move] = []
        for pit in pos.legal_pits():
            played = rules.play(self.variant, pos.k1, pos.k2, board, pit)
            assert played is not None  # None is an empty pit, and a legal pit holds stones
            if len(played) == 2:  # ("win", captured): the mover wins at once; else ("child", child, captured)
                out.append(Move(pit, pos.pits[pit], played[1], True, None, WIN, 1 if timed else None, None))
                continue
            _, (c1, c2, child_board), captured = played
            child = Position(c1, c2, tuple(int(x) for x in child_board), self.variant)
            seen = self.probe(child)
            value = FLIP[seen.value]
            if value == DRAW or not timed:
                dtz = None
            elif captured:
                dtz = 1  # the capture ends this count, whatever follows
            else:
                dtz = None if seen.dtz is None else seen.dtz + 1
            out.append(Move(pit, pos.pits[pit], captured, False, child, value, dtz, seen.dtz))
        return out

    def analyse(self, position: PositionLike) -> Analysis:
        """The position's stored value and every move, checked against each other: a
        value its own moves contradict means a damaged block (here or in a child's),
        and is a FormatError naming the position's block, never an answer."""
        pos = self.position(position)
        seen = self.probe(pos)
        moves = self.moves(pos)
        expected = _value_of(moves)
        k1, k2 = pos.layer
        where = problem = None
        if seen.value != expected:
            block = pos.rank() // fmt.BLOCK_BITS
            where = f"{self.url}/{layer_file(k1, k2, 'win')} block {block} (or the draw file's)"
            problem = f"is stored as {seen.value} but its moves say {expected}"
        elif seen.dtz is not None and all(m.dtz is not None for m in moves if m.value == seen.value):
            want = _distance_of(seen.value, moves)
            if want is not None and seen.dtz != want:
                width = self.reader.dtz_width(k1, k2)
                assert width is not None  # probe() read seen.dtz from this layer's distance table
                block = pos.rank() * width // fmt.BLOCK_BYTES
                where = f"{self.url}/{layer_file(k1, k2, 'dtz')} block {block}"
                problem = f"is stored as {seen.value} in {plies(seen.dtz)} but its moves say {plies(want)}"
        if problem:
            raise FormatError(
                f"{where}: position {pos} {problem}, so that block or a block of one of its "
                "children is damaged; no value is given."
            )
        layers = {pos.layer} | {m.child.layer for m in moves if m.child is not None}
        return Analysis(
            pos, seen, moves, all(self.verified(*layer) for layer in layers), self.has_distances(*pos.layer)
        )

    def best_move(self, position: PositionLike) -> Choice | None:
        """A move that keeps the position's value; None when the mover has no move.

        With distance tables a winner takes the shortest win and a loser the longest
        loss (a capture or a game end counts as one ply and starts a new count), so
        play makes progress and a won game is won. Without them: a game-ending move,
        then the largest capture into a won position, then any value-preserving move;
        a won game is then not guaranteed to be converted. The position's value is
        checked against its moves first (analyse).
        """
        return self.analyse(position).best_move()

    # -- reads (for tests and benchmarks) ---------------------------------------------
    @property
    def requests(self) -> int:
        """Reads of layer files and their checksum files."""
        return self.reader.requests

    @property
    def bytes_fetched(self) -> int:
        return self.reader.bytes_fetched

    @property
    def cached_bytes(self) -> int:
        return self.reader.cached_bytes

    def reads(self) -> dict[str, int]:
        """The reader's counters: requests, bytes fetched, cache hits and size."""
        return self.reader.stats()

    # -- statistics ---------------------------------------------------------------------
    def layer_stats(self, k1: int, k2: int) -> dict[str, Any]:
        """A layer's win/draw/loss counts and, with a distance table, the histogram
        of distances of its wins and of its losses and the longest of each with one
        example position. Counts come from the manifest where it has them and there
        is no distance table to read, or from the statistics `results` recorded
        there; otherwise from one pass over the layer's blocks (each checked
        against its checksum), a block at a time. Kept once computed."""
        key = (k1, k2)
        if key not in self._layer_stats:
            self._layer_stats[key] = self._compute_layer_stats(k1, k2)
        return self._layer_stats[key]

    def _compute_layer_stats(self, k1: int, k2: int) -> dict[str, Any]:
        self.variant.check_layer(k1, k2)
        npos = self.variant.layer_size(k1, k2)
        width = self.reader.dtz_width(k1, k2)
        out: dict[str, Any] = {"layer": layer_name(k1, k2), "k1": k1, "k2": k2, "positions": npos}
        entry = (self.manifest or {}).get("layers", {}).get(layer_name(k1, k2)) or {}
        saved = entry.get("stats")
        if (
            isinstance(saved, dict)
            and saved.get("positions") == npos
            and (saved.get("distances") is None) == (width is None)
        ):
            return dict(saved)  # recorded in the manifest by `results`: no block read
        if width is None and isinstance(entry.get("counts"), dict):
            out.update({v: int(entry["counts"][v]) for v in (WIN, DRAW, LOSS)})
            out["distances"] = None
            return out
        counts = {WIN: 0, DRAW: 0, LOSS: 0}
        hist = {WIN: np.zeros(1, np.int64), LOSS: np.zeros(1, np.int64)}
        longest = {WIN: (-1, -1), LOSS: (-1, -1)}  # (distance, rank)
        for b in range(fmt.blocks_for_bits(npos)):
            lo = b * fmt.BLOCK_BITS
            n = min(fmt.BLOCK_BITS, npos - lo)
            win = np.unpackbits(
                np.frombuffer(self.reader.block(k1, k2, "win", npos, b), np.uint8), bitorder="little"
            )[:n].astype(bool)
            draw = np.unpackbits(
                np.frombuffer(self.reader.block(k1, k2, "draw", npos, b), np.uint8), bitorder="little"
            )[:n].astype(bool)
            loss = ~(win | draw)
            counts[WIN] += int(win.sum())
            counts[DRAW] += int(draw.sum())
            counts[LOSS] += int(loss.sum())
            if width is None:
                continue
            dtz = self.reader.distance_range(k1, k2, width, npos, lo, n)
            for value, mask in ((WIN, win), (LOSS, loss)):
                if not mask.any():
                    continue
                seen = dtz[mask]
                counted = np.bincount(seen)
                if counted.shape[0] > hist[value].shape[0]:
                    hist[value] = np.pad(hist[value], (0, counted.shape[0] - hist[value].shape[0]))
                hist[value][: counted.shape[0]] += counted
                at = int(np.argmax(seen))
                if int(seen[at]) > longest[value][0]:
                    longest[value] = (int(seen[at]), lo + int(np.flatnonzero(mask)[at]))
        out.update(counts)
        if width is None:
            out["distances"] = None
            return out
        out["distances"] = {}
        for value in (WIN, LOSS):
            distance, rank = longest[value]
            out["distances"][value] = {
                "histogram": hist[value].tolist() if counts[value] else [],
                "longest": None if rank < 0 else distance,
                "example": None if rank < 0 else str(Position.from_rank(self.variant, k1, k2, rank)),
            }
        return out

    def stats(
        self,
        layers: Iterable[Sequence[int]] | None = None,
        compute: Callable[[list[tuple[int, ...]]], list[dict[str, Any]]] | None = None,
    ) -> dict[str, Any]:
        """Statistics of the whole tablebase (or of `layers`): totals, the longest
        win and loss over all layers with an example, and every layer's
        layer_stats, largest k1 + k2 first. `compute(layers)`, if given, returns
        the layers' layer_stats in that order: `stats --workers/--scheduler` runs
        layer_stats_task on Dask workers with it, one task a layer."""
        chosen: Collection[tuple[int, ...]] = (
            (self.layers() or set()) if layers is None else {tuple(l) for l in layers}
        )
        held = sorted(chosen, key=lambda l: (-sum(l), l))
        per_layer = compute(held) if compute is not None else [self.layer_stats(*layer) for layer in held]
        self._layer_stats.update({(s["k1"], s["k2"]): s for s in per_layer})
        total: dict[str, Any] = {"positions": sum(s["positions"] for s in per_layer)}
        for value in (WIN, DRAW, LOSS):
            total[value] = sum(s[value] for s in per_layer)
        longest: dict[str, dict[str, Any] | None] = {}
        for value in (WIN, LOSS):
            found = [
                (s["distances"][value]["longest"], s["distances"][value]["example"])
                for s in per_layer
                if s["distances"] and s["distances"][value]["longest"] is not None
            ]
            best = max(found, key=lambda f: f[0], default=None)
            longest[value] = None if best is None else {"distance": best[0], "example": best[1]}
        total["longest"] = longest
        return {"tablebase": self.url, "variant": self.variant.as_dict(), "total": total, "layers": per_layer}


def layer_stats_task(
    url: str, storage_options: dict[str, Any] | None, layer: tuple[int, int]
) -> dict[str, Any]:
    """One layer's statistics on a Dask worker: its own reader, its own pass."""
    return Tablebase.open(url, storage_options).layer_stats(*layer)


def _end_for_start(ply: int, result: str) -> str:
    """A game end `result` for the side to move at ply `ply`, seen from the start's mover."""
    return result if ply % 2 == 0 else FLIP[result]


def _value_of(moves: list[Move]) -> str:
    """The value the moves give the mover: a win if any wins, else a draw if any
    draws, else a loss (also with no move)."""
    return max((m.value for m in moves), key=NUMBER_OF.__getitem__, default=LOSS)


def _distance_of(value: str, moves: list[Move]) -> int | None:
    """What the mover's distance must be: the shortest win, or the longest loss (0
    with no move); None for a draw. Every move of that value must have a distance
    (analyse asks only then), so the `is not None` tests leave out no move."""
    if value == WIN:
        return min(m.dtz for m in moves if m.value == WIN and m.dtz is not None)
    if value == LOSS:
        return max((m.dtz for m in moves if m.dtz is not None), default=0)
    return None


def _move_order(value: str, timed: bool, m: Move) -> tuple[int, ...]:
    """The sort key of a move within its value's group: a win ends the game (most
    captured first) or is quickest, a timed loss is slowest, others capture most.
    `timed`: every move of the group has a distance."""
    if value == WIN:
        if m.ends_game:
            return (0, -m.captured, 0, m.pit)
        if not timed:
            return (1, 0, -m.captured, m.pit)
        assert m.dtz is not None  # timed
        return (1, m.dtz, -m.captured, m.pit)
    if value == LOSS and timed:
        assert m.dtz is not None  # timed
        return (-m.dtz, m.pit)
    return (-m.captured, m.pit)


@dataclass(frozen=True)
class Analysis:
    """A position's value and moves, consistent with each other; `verified`: every
    block read for them was checked against a checksum."""

    position: Position
    probe: Probe
    moves: list[Move]
    verified: bool
    distances: bool  # the position's layer has a distance table

    def ordered_moves(self) -> list[Move]:
        """Every move, best first for the mover: the moves that keep the position's
        value (wins, then draws, then losses), and within one value:

        - a win: moves that win at once (the largest capture first), then the
          shortest win by distance, then the largest capture;
        - a loss: the longest loss by distance, else the largest capture;
        - a draw: the largest capture;

        distances only where every move of that value has one; last the lower pit.
        The first is best_move's choice."""
        by_value = {value: [m for m in self.moves if m.value == value] for value in (WIN, DRAW, LOSS)}
        ordered: list[Move] = []
        for value, group in by_value.items():
            timed = value != DRAW and all(m.dtz is not None for m in group)
            ordered += sorted(group, key=functools.partial(_move_order, value, timed))
        return ordered

    def best_move(self) -> Choice | None:
        ordered = self.ordered_moves()
        if not ordered:
            return None
        best = ordered[0]
        keep = [m for m in ordered if m.value == best.value]
        timed = best.value != DRAW and all(m.dtz is not None for m in keep)
        if best.value == WIN:
            if best.ends_game:
                return Choice(best, True, "wins at once")
            if timed:
                assert best.dtz is not None  # timed: every move in keep, best among them, has a distance
                return Choice(best, True, f"shortest win: {plies(best.dtz)} to the next capture or the end")
            return Choice(best, False, "keeps the win; without distance tables conversion is not guaranteed")
        if best.value == LOSS:
            if timed:
                assert best.dtz is not None  # timed
                return Choice(best, True, f"longest loss: {plies(best.dtz)} to the next capture or the end")
            return Choice(
                best, False, "every move loses; without distance tables the longest loss is unknown"
            )
        return Choice(best, self.distances, "keeps the draw")


def plies(n: int) -> str:
    return f"{n} ply" if n == 1 else f"{n} plies"
