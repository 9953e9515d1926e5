"""`bestemshe-dist sample`: labelled positions as Parquet shards, made on Dask.

The plan is fixed by the settings before anything runs: shard i holds
`shard_positions` positions (the last one the rest), split over the layers by a
multinomial draw seeded with (seed, i): weights are the positions each layer
has (uniform over positions; those with no move left out unless asked for) or
equal (`layer`). One task a pair loads the pair's codes and its capture targets
once and labels its positions of every shard in one numba call a layer (each
layer's positions of shard i drawn with a generator seeded (seed, i, k1, k2));
one task a shard takes the pairs' pieces in pair order, shuffles them with
(seed, i) and writes the shard whole. Shards go in waves of WAVE_POSITIONS, so
the labels in flight stay bounded whatever --positions is. So the shards depend on the settings and
the tablebase only, never on how many workers ran them, and a shard already
written is a finished one (writes are atomic): a rerun with the same settings
writes only the missing shards; with other settings it stops with one sentence.

The card: dataset.json (settings, source, command line, columns, per-shard and
total counts) and README.md (the same for people), written at the start (so a
rerun can check its settings) and again complete at the end.
"""

from __future__ import annotations

import io
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

import numpy as np
import numpy.typing as npt

from ..data.cache import OnceCache, worker_memory_budget
from ..errors import UsageError
from ..game.dag import check_min_captured
from ..game.geometry import pair_layers
from ..game.variant import Variant
from ..naming import (
    SAMPLE_CARD,
    SAMPLE_README,
    SHARD_GLOB,
    counted,
    layer_name,
    parse_shard_file,
    sample_key,
    shard_file,
)
from ..oracle.tablebase import VALUE_OF, Tablebase
from ..solve.code_arrays import Codes
from .labels import ILLEGAL, LayerBundle, draw_ranks, pair_codes, positions_with_a_move

if TYPE_CHECKING:
    from ..data.store import Store

FORMAT = "bestemshe-dist sample 1"
WEIGHTS = ("uniform", "layer")
DEFAULT_SHARD_POSITIONS = 1_000_000
READ_CACHE_BYTES = 64 * 2**20  # a task reads whole layers once; blocks need not stay cached
# Shards labelled at once: their labels (about 35 bytes a position) sit in the
# workers' memory until written, so a sample of any size holds at most this many.
WAVE_POSITIONS = 20_000_000


@dataclass(frozen=True)
class SampleSpec:
    """What a sample is; two runs with equal specs write the same shards."""

    source: str  # the tablebase, credentials removed
    stones: int
    pits: int
    positions: int
    seed: int
    shard_positions: int
    min_captured: int
    weights: str
    with_no_move: bool
    layers: tuple[tuple[int, int], ...]  # ((k1, k2), ...) sorted
    distances: bool  # some layer has a distance table: a dtz column

    @property
    def variant(self) -> Variant:
        return Variant(self.stones, self.pits)

    @property
    def shards(self) -> int:
        return -(-self.positions // self.shard_positions)

    def shard_size(self, shard: int) -> int:
        return min(self.shard_positions, self.positions - shard * self.shard_positions)

    def weights_of_layers(self) -> npt.NDArray[np.float64]:
        v = self.variant
        if self.weights == "layer":
            w = np.ones(len(self.layers))
        elif self.with_no_move:
            w = np.array([v.layer_size(*l) for l in self.layers], np.float64)
        else:
            w = np.array([positions_with_a_move(v, l) for l in self.layers], np.float64)
        return w / w.sum()

    def counts(self, shard: int) -> npt.NDArray[np.int64]:
        """Positions of each layer in `shard`."""
        rng = np.random.default_rng([self.seed, shard])
        return rng.multinomial(self.shard_size(shard), self.weights_of_layers())

    def pairs(self) -> list[tuple[int, int]]:
        return sorted({(min(l), max(l)) for l in self.layers})

    def as_card(self) -> dict[str, Any]:
        data = asdict(self)
        data["layers"] = [layer_name(*l) for l in self.layers]
        return data


def columns(variant: Variant, distances: bool) -> dict[str, str]:
    """Column name -> what it holds (the card lists them)."""
    out = {"k1": "kazan of the side to move (int8)", "k2": "kazan of the other side (int8)"}
    for j in range(variant.board):
        side = "the side to move's" if j < variant.pits else "the other side's"
        out[f"p{j}"] = f"stones in {side} pit {j % variant.pits + 1} from its left (int8)"
    out["value"] = "value for the side to move: 1 win, 0 draw, -1 loss (int8)"
    if distances:
        out["dtz"] = (
            "plies to the next capture or the end under best play (int16); null for a draw "
            "or a layer without a distance table"
        )
    for p in range(variant.pits):
        out[f"legal_{p}"] = f"pit {p + 1} (index {p}) holds stones (bool)"
        out[f"after_{p}"] = f"the value pit {p + 1}'s move leaves the mover: 1, 0, -1; null if illegal (int8)"
        out[f"keeps_{p}"] = f"pit {p + 1}'s move is legal and keeps the position's value (bool)"
    out["legal_mask"] = "bit p set: pit index p is legal (uint8)"
    out["keeps_mask"] = "bit p set: pit index p keeps the value (uint8)"
    return out


class Labels(NamedTuple):
    """Labelled positions, a row each: what a pair task makes and a shard is built of."""

    kazans: npt.NDArray[np.int8]  # (N, 2)
    boards: npt.NDArray[np.int8]  # (N, board)
    value: npt.NDArray[np.int8]  # (N,): 1, 0, -1 for the side to move
    dtz: npt.NDArray[np.int16]  # (N,), -1: none
    after: npt.NDArray[np.int8]  # (N, pits): the move's value for the mover, ILLEGAL for an empty pit

    @classmethod
    def join(cls, parts: list[Labels], v: Variant) -> Labels:
        if not parts:
            return cls(
                np.zeros((0, 2), np.int8),
                np.zeros((0, v.board), np.int8),
                np.zeros(0, np.int8),
                np.zeros(0, np.int16),
                np.zeros((0, v.pits), np.int8),
            )
        return cls(*(np.concatenate(field) for field in zip(*parts)))

    def take(self, order: npt.NDArray[np.integer[Any]]) -> Labels:
        return Labels(*(field[order] for field in self))

    def counts(self) -> dict[str, int]:
        return {name: int((self.value == x).sum()) for x, name in VALUE_OF.items()}


# -- tasks --------------------------------------------------------------------------------
def label_pair_task(
    url: str, options: dict[str, Any], spec: SampleSpec, pair: tuple[int, int], shards: list[int]
) -> dict[int | str, Any]:
    """shard -> this pair's Labels of that shard (its layers in order); also "seconds"
    and "labelled", the task's time and positions."""
    start = time.perf_counter()
    v = spec.variant
    tb = Tablebase.open(url, options, cache_bytes=READ_CACHE_BYTES)
    layers = [l for l in pair_layers(*pair) if l in spec.layers]
    index = {l: spec.layers.index(l) for l in layers}
    bundle: dict[tuple[int, int], LayerBundle] | None = None
    out: dict[int | str, Any] = {}
    labelled = 0
    for shard in shards:
        counts = spec.counts(shard)
        parts: list[Labels] = []
        for layer in layers:
            count = int(counts[index[layer]])
            if count == 0:
                continue
            if bundle is None:  # loaded once, and only if a shard needs this pair
                bundle = pair_codes(lambda l: _layer_codes(tb, url, l), v, *pair)
            rng = np.random.default_rng([spec.seed, shard, *layer])
            ranks, boards, value, after = draw_ranks(v, layer, bundle[layer], count, rng, spec.with_no_move)
            dtz = np.full(count, -1, np.int16)
            width = tb.reader.dtz_width(*layer)
            if width is not None:
                decided = np.flatnonzero(value != 0)
                order = decided[np.argsort(ranks[decided], kind="stable")]
                dtz[order] = tb.reader.distances(*layer, width, v.layer_size(*layer), ranks[order])
            kazans = np.broadcast_to(np.array(layer, np.int8), (count, 2))
            parts.append(Labels(kazans, boards, value, dtz, after))
            labelled += count
        out[shard] = Labels.join(parts, v)
    out["seconds"] = time.perf_counter() - start
    out["labelled"] = labelled
    return out


# A worker's layers, kept across its tasks: a layer is the capture target of many
# pairs, and was read once a pair before (m24: 91 layers read as 300-odd).
_CODES = OnceCache(worker_memory_budget, keep_newest=True)


def _layer_codes(tb: Tablebase, url: str, layer: tuple[int, int]) -> Codes:
    entry = ((tb.manifest or {}).get("layers") or {}).get(layer_name(*layer)) or {}
    identity = (entry.get("sha256") or {}).get("win")  # a layer solved again is another key

    def load() -> tuple[Codes, int]:
        codes = tb.reader.codes(*layer, tb.variant.layer_size(*layer))
        return codes, codes.nbytes

    return _CODES.get((url, layer, identity), load)


def shard_piece(result: dict[int | str, Any], shard: int) -> Labels:
    return result[shard]


def write_shard_task(
    out_url: str, out_options: dict[str, Any], spec: SampleSpec, shard: int, pieces: list[Labels]
) -> dict[str, Any]:
    """Shuffle the pieces (pair order) with (seed, shard) and write the shard whole."""
    from ..data.store import Store

    labels = Labels.join(pieces, spec.variant)
    labels = labels.take(np.random.default_rng([spec.seed, shard, 0x5EED]).permutation(labels.value.shape[0]))
    buffer = io.BytesIO()
    _write_parquet(shard_table(spec, labels), buffer)
    name = shard_file(shard, spec.shards)
    Store(out_url, out_options).write_bytes(name, buffer.getvalue())
    return {"shard": shard, "name": name, "rows": int(labels.value.shape[0]), **labels.counts()}


def shard_table(spec: SampleSpec, labels: Labels) -> Any:
    """The shard's Arrow table (pyarrow is untyped), columns in the card's order."""
    import pyarrow as pa

    v = spec.variant
    kazans, boards, value, dtz, after = labels
    data = {"k1": pa.array(kazans[:, 0], pa.int8()), "k2": pa.array(kazans[:, 1], pa.int8())}
    for j in range(v.board):
        data[f"p{j}"] = pa.array(boards[:, j], pa.int8())
    data["value"] = pa.array(value, pa.int8())
    if spec.distances:
        data["dtz"] = pa.array(dtz, pa.int16(), mask=dtz < 0)
    legal = after != ILLEGAL
    keeps = legal & (after == value[:, None])
    for p in range(v.pits):
        data[f"legal_{p}"] = pa.array(legal[:, p], pa.bool_())
        data[f"after_{p}"] = pa.array(after[:, p], pa.int8(), mask=~legal[:, p])
        data[f"keeps_{p}"] = pa.array(keeps[:, p], pa.bool_())
    bits = (1 << np.arange(v.pits)).astype(np.uint8)
    data["legal_mask"] = pa.array((legal * bits).sum(axis=1).astype(np.uint8), pa.uint8())
    data["keeps_mask"] = pa.array((keeps * bits).sum(axis=1).astype(np.uint8), pa.uint8())
    return pa.table(data)


def _write_parquet(table: Any, sink: BinaryIO) -> None:
    import pyarrow.parquet as pq

    # zstd, one row group per 256k rows; no timestamps go into the file, so the
    # same rows give the same bytes
    pq.write_table(table, sink, compression="zstd", row_group_size=262_144)


def shard_counts(store: Store, name: str) -> dict[str, Any]:
    """A written shard's rows and value counts, read back from its value column."""
    import pyarrow.parquet as pq

    value = pq.read_table(io.BytesIO(store.read_bytes(name)), columns=["value"])["value"].to_numpy()
    parsed = parse_shard_file(name)
    assert parsed is not None  # `name` is a shard_file(): sample() passes the shards written
    index, _ = parsed
    return {
        "shard": index,
        "name": name,
        "rows": int(value.shape[0]),
        **{name: int((value == x).sum()) for x, name in VALUE_OF.items()},
    }


# -- the driver ----------------------------------------------------------------------------
def plan_sample(
    tb: Tablebase,
    *,
    positions: int,
    seed: int,
    shard_positions: int,
    min_captured: int,
    weights: str,
    with_no_move: bool,
) -> SampleSpec:
    """The spec for a tablebase and the settings; bad settings are one sentence."""
    if positions < 1:
        raise UsageError(f"--positions must be at least 1, not {positions}.")
    if shard_positions < 1:
        raise UsageError(f"--shard-positions must be at least 1, not {shard_positions}.")
    if weights not in WEIGHTS:
        raise UsageError(f"--weights must be one of {', '.join(WEIGHTS)}, not {weights!r}.")
    if -(-positions // shard_positions) > 99_999:
        raise UsageError(
            f"{positions:,} positions in shards of {shard_positions:,} make more than 99,999 shards; "
            "raise --shard-positions."
        )
    check_min_captured(min_captured)
    held = tb.layers()
    if held is None:
        raise UsageError(f"{tb.url} cannot be listed and has no manifest: sample needs to know its layers.")
    v = tb.variant
    layers = tuple(
        sorted(
            l for l in held if sum(l) >= min_captured and (with_no_move or positions_with_a_move(v, l) > 0)
        )
    )
    if not layers:
        raise UsageError(f"{tb.url} holds no layer with k1 + k2 >= {min_captured}.")
    return SampleSpec(
        source=tb.url,
        stones=v.stones,
        pits=v.pits,
        positions=positions,
        seed=seed,
        shard_positions=shard_positions,
        min_captured=min_captured,
        weights=weights,
        with_no_move=with_no_move,
        layers=layers,
        distances=any(tb.has_distances(*l) for l in layers),
    )


def check_out(store: Store, spec: SampleSpec) -> list[int]:
    """The shards already written at `store` for this spec (a rerun skips them);
    a card of other settings there is one sentence."""
    raw = store.read_optional(SAMPLE_CARD)
    if raw is not None:
        try:
            old = json.loads(raw)["spec"]
        except (ValueError, KeyError, TypeError):
            raise UsageError(
                f"{store.shown}/{SAMPLE_CARD} is no sample card; choose another --out."
            ) from None
        now = json.loads(json.dumps(spec.as_card()))  # as the card stores it (tuples as lists)
        if old != now:
            changed = sorted(k for k in now if old.get(k) != now[k])
            raise UsageError(
                f"{store.shown} holds a sample made with other settings ({', '.join(changed)}); "
                "rerun with those, or choose another --out."
            )
    written: list[int] = []
    for name in store.list_names(SHARD_GLOB):
        parsed = parse_shard_file(name)
        if parsed and parsed[1] == spec.shards and parsed[0] < spec.shards:
            written.append(parsed[0])
    return sorted(written)


def sample(
    client: Any,
    url: str,
    options: dict[str, Any],
    out_url: str,
    out_options: dict[str, Any],
    spec: SampleSpec,
    *,
    command: str,
    log: Callable[[str], object] = print,
) -> dict[str, Any]:
    """Write the shards `out_url` lacks, then the card; returns the card."""
    from distributed import as_completed

    from ..data.store import Store

    store = Store(out_url, out_options)
    done = set(check_out(store, spec))
    missing = [i for i in range(spec.shards) if i not in done]
    card: dict[str, Any] = {"format": FORMAT, "spec": spec.as_card(), "command": command, "complete": False}
    store.write_bytes(SAMPLE_CARD, json.dumps(card, indent=1).encode())
    log(
        f"sample: {spec.positions:,} positions of {counted(len(spec.layers), 'layer')} of {spec.source} in "
        f"{counted(spec.shards, 'shard')}; {len(done)} already written, {len(missing)} to write"
    )
    start = time.perf_counter()
    results: list[dict[str, Any]] = []
    labelled = task_seconds = 0.0
    tag = uuid.uuid4().hex[:8]  # this run's keys, apart from any other run on the scheduler
    per_wave = max(1, WAVE_POSITIONS // spec.shard_positions)
    for first in range(0, len(missing), per_wave):
        wave = missing[first : first + per_wave]
        pairs = {
            pair: client.submit(
                label_pair_task,
                url,
                options,
                spec,
                pair,
                wave,
                key=sample_key("label", f"{layer_name(*pair)}-{wave[0]:05d}-{tag}"),
            )
            for pair in spec.pairs()
        }
        pieces = {
            (pair, shard): client.submit(
                shard_piece, fut, shard, key=sample_key("piece", f"{layer_name(*pair)}-{shard:05d}-{tag}")
            )
            for pair, fut in pairs.items()
            for shard in wave
        }
        writes = [
            client.submit(
                write_shard_task,
                out_url,
                out_options,
                spec,
                shard,
                [pieces[(pair, shard)] for pair in spec.pairs()],
                key=sample_key("shard", f"{shard:05d}-{tag}"),
            )
            for shard in wave
        ]
        for fut in as_completed(writes):
            got = fut.result()
            results.append(got)
            log(f"  {got['name']}: {got['rows']:,} rows ({len(results)}/{len(missing)})")
        for fut in pairs.values():
            got = fut.result()
            labelled += got["labelled"]
            task_seconds += got["seconds"]
        del pairs, pieces, writes  # the wave's labels leave the workers' memory
    wall = time.perf_counter() - start
    shards = sorted(
        results + [shard_counts(store, shard_file(i, spec.shards)) for i in sorted(done)],
        key=lambda s: s["shard"],
    )
    totals = {k: sum(s[k] for s in shards) for k in ("rows", "win", "draw", "loss")}
    if totals["rows"] != spec.positions:
        raise UsageError(f"the shards at {store.shown} hold {totals['rows']:,} rows, not {spec.positions:,}.")
    card.update(
        complete=True,
        columns=columns(spec.variant, spec.distances),
        shards=shards,
        counts=totals,
        run={
            "wall_seconds": round(wall, 3),
            "labelled": int(labelled),
            "label_task_seconds": round(task_seconds, 3),
        },
    )
    store.write_bytes(SAMPLE_CARD, json.dumps(card, indent=1).encode())
    store.write_bytes(SAMPLE_README, card_text(card).encode())
    if labelled:
        log(
            f"sample: {int(labelled):,} positions labelled in {task_seconds:.2f} task-seconds "
            f"({labelled / max(task_seconds, 1e-9):,.0f} positions per core-second, reads included); "
            f"{wall:.1f} s wall"
        )
    log(
        f"sample: {totals['rows']:,} rows: win {totals['win']:,}, draw {totals['draw']:,}, "
        f"loss {totals['loss']:,}; card: {store.shown}/{SAMPLE_README}"
    )
    return card


def card_text(card: dict[str, Any]) -> str:
    s = card["spec"]
    lines = [
        "# Bestemshe positions labelled by the tablebase",
        "",
        f"{s['positions']:,} positions of the {s['stones']}-stone, {s['pits']}-pit game from `{s['source']}` "
        f"(the {counted(len(s['layers']), 'layer')} with k1 + k2 >= {s['min_captured']} it holds), drawn "
        + ("uniformly over positions" if s["weights"] == "uniform" else "with equal weight per layer")
        + (", positions with no move included" if s["with_no_move"] else ", positions with no move left out")
        + f", seed {s['seed']}, in {counted(len(card['shards']), 'shard')} of at most {s['shard_positions']:,} rows.",
        "",
        f"Made by: `{card['command']}`",
        "",
        "| value | rows |",
        "|---|---|",
    ]
    lines += [f"| {k} | {card['counts'][k]:,} |" for k in ("win", "draw", "loss")]
    lines += ["", "## Columns", ""] + [f"- `{name}`: {what}" for name, what in card["columns"].items()]
    lines += ["", "## Shards", "", "| shard | rows | win | draw | loss |", "|---|---|---|---|---|"]
    lines += [
        f"| {x['name']} | {x['rows']:,} | {x['win']:,} | {x['draw']:,} | {x['loss']:,} |"
        for x in card["shards"]
    ]
    return "\n".join(lines) + "\n"
