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

from dataclasses import dataclass

from ..data import format as fmt
from ..data.blocks import LayerReader
from ..data.checksums import HASH
from ..data.store import Store, find_tablebase
from ..errors import FormatError, StoreError
from ..game import rules
from ..game.position import Position
from ..game.variant import Variant
from ..naming import layer_file, layer_name

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


class Tablebase:
    """A tablebase at any fsspec URL, read a block at a time (see the module doc)."""

    def __init__(self, url: str, storage_options: dict | None = None, *,
                 cache_bytes: int = DEFAULT_CACHE_BYTES):
        self.store = Store(url, storage_options)
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
        return self.reader.dtz_width(k1, k2) is not None

    def verified(self, k1: int, k2: int) -> bool:
        """Whether the layer's blocks are checked against checksums (else its answers
        are unverified: a tablebase without checksum files, see `bestemshe-dist checksums`)."""
        return self.reader.verified(k1, k2)

    # -- queries ------------------------------------------------------------------
    def probe(self, position) -> Probe:
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

    def analyse(self, position) -> "Analysis":
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
                block = pos.rank() * self.reader.dtz_width(k1, k2) // fmt.BLOCK_BYTES
                where = f"{self.url}/{layer_file(k1, k2, 'dtz')} block {block}"
                problem = f"is stored as {seen.value} in {plies(seen.dtz)} but its moves say {plies(want)}"
        if problem:
            raise FormatError(f"{where}: position {pos} {problem}, so that block or a block of one of its "
                              "children is damaged; no value is given.")
        layers = {pos.layer} | {m.child.layer for m in moves if m.child is not None}
        return Analysis(pos, seen, moves, all(self.verified(*layer) for layer in layers),
                        self.has_distances(*pos.layer))

    def best_move(self, position) -> Choice | None:
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

    def stats(self) -> dict:
        return self.reader.stats()


_RANK = {WIN: 0, DRAW: 1, LOSS: 2}


def _value_of(moves: list) -> str:
    """The value the moves give the mover: a win if any wins, else a draw if any
    draws, else a loss (also with no move)."""
    return min((m.value for m in moves), key=_RANK.__getitem__, default=LOSS)


def _distance_of(value: str, moves: list) -> int | None:
    """What the mover's distance must be: the shortest win, or the longest loss (0
    with no move); None for a draw."""
    if value == WIN:
        return min(m.dtz for m in moves if m.value == WIN)
    if value == LOSS:
        return max((m.dtz for m in moves), default=0)
    return None


@dataclass(frozen=True)
class Analysis:
    """A position's value and moves, consistent with each other; `verified`: every
    block read for them was checked against a checksum."""

    position: Position
    probe: Probe
    moves: list
    verified: bool
    distances: bool         # the position's layer has a distance table

    def best_move(self) -> Choice | None:
        moves = self.moves
        if not moves:
            return None
        value = _value_of(moves)
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
        return Choice(best, self.distances, "keeps the draw")


def plies(n: int) -> str:
    return f"{n} ply" if n == 1 else f"{n} plies"


# -- what `bestemshe-dist probe` prints ---------------------------------------------------
def report(tb: Tablebase, position) -> dict:
    """A position's value, distance, every move and the best move, as plain JSON data.
    Pits are 0-based indexes into the mover's row here (`pit`, `best_move`); the
    text of format_report numbers them 1..pits, as `play` does."""
    found = tb.analyse(position)
    pos, seen, moves = found.position, found.probe, found.moves
    choice = found.best_move()
    return {
        "position": str(pos),
        "variant": tb.variant.as_dict(),
        "k1": pos.k1, "k2": pos.k2, "pits": list(pos.pits),
        "rank": pos.rank(),
        "value": seen.value,
        "dtz": seen.dtz,
        "distances": found.distances,
        "verified": found.verified,
        "checksums": HASH if found.verified else None,
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


UNVERIFIED = ("unverified: this tablebase has no checksums for the layers read, so a damaged block could "
              "go unnoticed (bestemshe-dist checksums URL writes them from a copy you trust)")


def format_report(data: dict) -> str:
    v = data["variant"]
    lines = [
        f"position  {data['position']}   (layer {layer_name(data['k1'], data['k2'])}, rank {data['rank']:,}; "
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
        lines.append(f"  pit {m['pit'] + 1}  {_value_text(m['value'], m['dtz']):<16} {what}   ({stones}{took})")
    if data["best_move"] is not None:
        lines.append(f"best      pit {data['best_move'] + 1}: {data['best_move_reason']}")
    lines.append(f"checked   every block read matched its checksum ({data['checksums']})" if data["verified"]
                 else f"checked   {UNVERIFIED}")
    return "\n".join(lines)
