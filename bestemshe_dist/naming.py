"""Every name this project gives a thing, built and parsed here and nowhere else.

- layers and their files (SPEC.md): `8_12`, `layer_8_12_win.bin`, the
  checksum sidecar `layer_8_12.sums.json`, the manifest;
- the Dask task keys of a solve and of a verification, which the dashboard and
  `status` read back;
- the private work files under `.bestemshe/` beside a tablebase (the lease,
  the last solve's scope, a pair's checkpointed rounds, staged files);
- the arrays and marks a host keeps for a pair in its memory.

Pure string functions: this module imports nothing from the package, so every
folder may use it, and what builds a name and what parses it cannot drift apart.
The builders look alike on purpose (a docstring and an f-string each): one
function a name, so a caller never spells a name itself.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# -- layers and their files -----------------------------------------------------------
MANIFEST = "manifest.json"
# The Dask worker resource a solve's regular tasks each take one of; a worker
# started for a solve has one thread more than these slots, for the short tasks a
# whole round waits on (run/driver.py).
SLOTS = "slots"
LAYER_KINDS = ("win", "draw", "dtz")
LAYER_FILE_GLOB = "layer_*_*_*.bin"
WIN_FILE_GLOB = "layer_*_*_win.bin"
_LAYER_NAME = re.compile(r"^(\d+)_(\d+)$")
_LAYER_FILE = re.compile(r"^layer_(\d+)_(\d+)_(win|draw|dtz)\.bin$")


def layer_name(k1: int, k2: int) -> str:
    """A layer as people and the manifest name it: `8_12` (kazans of the mover, then the other)."""
    return f"{k1}_{k2}"


def parse_layer_name(text: str) -> tuple[int, int] | None:
    m = _LAYER_NAME.match(text)
    return None if m is None else (int(m.group(1)), int(m.group(2)))


def layer_file(k1: int, k2: int, kind: str) -> str:
    """`layer_<k1>_<k2>_<kind>.bin`, kind win, draw (SPEC.md) or dtz (distances)."""
    return f"layer_{k1}_{k2}_{kind}.bin"


def parse_layer_file(name: str) -> tuple[int, int, str] | None:
    """(k1, k2, kind) of a layer file's name (no folder), else None."""
    m = _LAYER_FILE.match(name)
    return None if m is None else (int(m.group(1)), int(m.group(2)), m.group(3))


def sums_file(k1: int, k2: int) -> str:
    """The layer's checksum sidecar."""
    return f"layer_{k1}_{k2}.sums.json"


# -- task keys --------------------------------------------------------------------------
# A solve's keys end with "-" and its run's 8 hex digits (run_key), so a later solve
# never gets a finished task of an earlier one.
def pair_key(a: int, b: int) -> str:
    """A pair's name and its one task when it is small: `pair-<a>-<b>`, a <= b."""
    return f"pair-{a}-{b}"


def parse_pair_key(text: str) -> tuple[int, int] | None:
    m = re.match(r"^pair-(\d+)-(\d+)$", text)
    return None if m is None else (int(m.group(1)), int(m.group(2)))


def layer_key(k1: int, k2: int) -> str:
    """The task that publishes a layer (or assembles its published parts)."""
    return f"layer-{k1}-{k2}"


def check_key(k1: int, k2: int) -> str:
    """The task that checks a published layer on resume."""
    return f"check-{k1}-{k2}"


def round_key(pair: str, round_: int, attempt: int = 1) -> str:
    """What the keys of a round's tasks start with. A round run again after a lost
    host gets keys of its own (`.try<n>`): with the same keys, Dask would hand back
    the results of the first try's tasks still held, and run nothing."""
    return f"{pair}/round-{round_}" + (f".try{attempt}" if attempt > 1 else "")


def chunk_key(pair: str, round_: int, chunk: int, piece: int | None = None, attempt: int = 1) -> str:
    """A round's task over one chunk of the pair (its layers' chunks numbered one
    after the other), or over one piece of a frontier chunk's sources."""
    name = f"{round_key(pair, round_, attempt)}/chunk-{chunk}"
    return name if piece is None else f"{name}.{piece}"


def small_round_key(pair: str, round_: int) -> str:
    """A frontier round with few sources, run whole in one task."""
    return f"{pair}/round-{round_}/small"


def flush_key(pair: str, round_: int, layer: tuple[int, int], host: str, group: int, attempt: int = 1) -> str:
    """One of a host's tasks writing a frontier round's decisions for one layer."""
    return f"{round_key(pair, round_, attempt)}/flush-{layer[0]}-{layer[1]}-{host}-{group}"


def publish_part_key(pair: str, layer: tuple[int, int], table: str, group: int) -> str:
    """A task compressing one group of a large layer's blocks."""
    return f"{pair}/publish-{layer[0]}-{layer[1]}/{table}-{group}"


def run_key(name: str, run_tag: str) -> str:
    return f"{name}-{run_tag}"


def verify_files_key(k1: int, k2: int, run_tag: str) -> str:
    """A verification task checking a layer's files against the manifest."""
    return f"verify-files-{k1}-{k2}-{run_tag}"


def verify_key(k1: int, k2: int, chunk: int, run_tag: str) -> str:
    """A verification task over one chunk of a layer."""
    return f"verify-{k1}-{k2}-chunk-{chunk}-{run_tag}"


def verify_distances_key(k1: int, k2: int, chunk: int, run_tag: str) -> str:
    """The distance pass over one chunk of a layer checked in two passes."""
    return f"verify-{k1}-{k2}-chunk-{chunk}-distances-{run_tag}"


class TaskName(NamedTuple):
    """What a solve's task key says: its pair (a, b), the layer it publishes (or
    None: all of the pair's), and for a round's chunk task the round and the chunk
    (`<c>` or `<c>.<piece>`)."""

    pair: tuple[int, int] | None
    layer: tuple[int, int] | None
    round: int | None = None
    chunk: str | None = None


_TASK = re.compile(
    r"^pair-(\d+)-(\d+)(?:/round-(\d+)(?:\.try\d+)?/chunk-(\d+(?:\.\d+)?)|/publish-(\d+)-(\d+)/.*)?"
    r"(?:-[0-9a-f]{8})?$"
)
_LAYER_TASK = re.compile(r"^layer-(\d+)-(\d+)(?:-[0-9a-f]{8})?$")


def parse_task_key(key: str) -> TaskName | None:
    """A solve's task key read back: a small pair's task, a round's chunk task, a
    publish part or a layer's task (None for any other key: flushes, one-task
    rounds, checks)."""
    m = _TASK.match(key)
    if m:
        pair = (int(m.group(1)), int(m.group(2)))
        layer = None if m.group(5) is None else (int(m.group(5)), int(m.group(6)))
        round_ = None if m.group(3) is None else int(m.group(3))
        return TaskName(pair, layer, round_, m.group(4))
    m = _LAYER_TASK.match(key)
    if m:
        return TaskName(None, (int(m.group(1)), int(m.group(2))))
    return None


# -- private work files beside a tablebase ------------------------------------------------
PRIVATE = ".bestemshe"
SOLVE_RECORD = f"{PRIVATE}/solve.json"  # the last solve's scope, for `status`
RUN_LOG = f"{PRIVATE}/runs.jsonl"  # a line a solve run: when, how it ended, what it did
VERIFIED = f"{PRIVATE}/verified"  # a record a layer whose positions verify checked and passed
VERIFY_REPORT = f"{PRIVATE}/verify-report.json"  # the report of the last full verify
LEASE = f"{PRIVATE}/lease.json"  # the one solve writing here
PAIRS = f"{PRIVATE}/pairs"  # checkpointed rounds, pair by pair
TMP = f"{PRIVATE}/tmp"  # whole files on their way into place
_PART = re.compile(r"(\d+)_(\d+)-c(\d+)-")


def tmp_file(unique: str) -> str:
    return f"{TMP}/{unique}"


def staged(name: str) -> str:
    """Where a small pair's task writes a file before its publish task moves it into place."""
    return f"{PRIVATE}/staging/{name}"


def pair_prefix(pair: str) -> str:
    return f"{PAIRS}/{pair}"


def parse_pair_dir(name: str) -> tuple[int, int] | None:
    """(a, b) of a folder name under PAIRS."""
    return parse_pair_key(name)


def series_file(pair: str) -> str:
    """Which dependencies and variant a pair's checkpoints were made from."""
    return f"{pair_prefix(pair)}/series.json"


def round_prefix(pair: str, round_: int) -> str:
    return f"{pair_prefix(pair)}/round-{round_:05d}"


def round_marker(pair: str, round_: int) -> str:
    """Written by the driver once every chunk of the round has written its part."""
    return f"{round_prefix(pair, round_)}/complete.json"


def part_name(pair: str, round_: int, layer: tuple[int, int], chunk: int, tag: str) -> str:
    """A round's checkpoint part: the decisions of one chunk of one layer, `s` (a
    sweep task's, its own chunk) or `h<host>` (a frontier round's, gathered on a host)."""
    return f"{round_prefix(pair, round_)}/{layer[0]}_{layer[1]}-c{chunk:05d}-{tag}.delta"


def parse_part(name: str) -> tuple[tuple[int, int], int] | None:
    """(layer, chunk) of a checkpoint part's name (a path or not), else None."""
    m = _PART.match(name.rsplit("/", 1)[-1])
    return None if m is None else ((int(m.group(1)), int(m.group(2))), int(m.group(3)))


def publish_part_name(pair: str, layer: tuple[int, int], kind: str, group: int) -> str:
    """One group of a large layer's compressed blocks, before the layer file is assembled."""
    return f"{pair_prefix(pair)}/publish/{layer_file(*layer, kind)}.part-{group:05d}"


# -- a pair's arrays and marks in a host's memory ---------------------------------------------
def codes_array(pair: str, layer: tuple[int, int]) -> str:
    return f"{pair}-codes-{layer[0]}_{layer[1]}"


def states_array(pair: str, layer: tuple[int, int]) -> str:
    """A counting pair's 3-bit states of one layer (solve/counting.py)."""
    return f"{pair}-states-{layer[0]}_{layer[1]}"


def counted_mark(pair: str) -> str:
    """The last round a counting pair's states on this host are complete after
    ({"round": r, "complete": bool}: a try that died leaves it incomplete)."""
    return f"{pair}-counted"


def round_array(pair: str) -> str:
    """The round's decisions, shared by the pair's two layers."""
    return f"{pair}-round"


def applied_mark(pair: str) -> str:
    """The last round whose decisions the host's copy of the pair holds."""
    return f"{pair}-applied"


def sync_lock(pair: str) -> str:
    """Held while the host brings its copy of the pair up to a round."""
    return f"{pair}-sync"


def dep_row(k1: int) -> str:
    """One array per k1 on a host: every dependency layer (k1, m) in its slot."""
    return f"row-{k1}"


def dep_slot(layer: tuple[int, int]) -> str:
    """The mark of a dependency layer loaded into its row's slot."""
    return f"row-{layer[0]}-{layer[1]}"


def flush_lock(pair: str, chunk: int) -> str:
    """Held while a chunk's decisions are taken out of the host's round array."""
    return f"{pair}-flush-{chunk}"


def small_round_mark(pair: str) -> str:
    """Which round a one-task round last started on this host (a retry empties it first)."""
    return f"{pair}-small-round"


# -- labelled samples (learn/sample.py) --------------------------------------------------
SAMPLE_CARD = "dataset.json"  # the card as data: settings, columns, counts
SAMPLE_README = "README.md"  # the same card for people
SHARD_GLOB = "train-*-of-*.parquet"
_SHARD_FILE = re.compile(r"^train-(\d{5})-of-(\d{5})\.parquet$")


def shard_file(index: int, count: int) -> str:
    """A training shard, numbered from 0 as the datasets people load are: `train-00003-of-00010.parquet`."""
    return f"train-{index:05d}-of-{count:05d}.parquet"


def parse_shard_file(name: str) -> tuple[int, int] | None:
    m = _SHARD_FILE.match(name)
    return None if m is None else (int(m.group(1)), int(m.group(2)))


def sample_key(kind: str, part: str) -> str:
    """A sample's Dask task: `sample-label-8_12` (a pair's labels), `sample-shard-00003`."""
    return f"sample-{kind}-{part}"


# -- counted things in messages ---------------------------------------------------------
def counted(n: int, word: str, words: str | None = None) -> str:
    """`1 worker`, `2 workers`, `12,345 layers`: a count and its noun, agreeing (`words`
    for a plural that is not word + s)."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def verified_record(k1: int, k2: int, distances: bool) -> str:
    """verify's record that every position of layer k1_k2 passed, bound to the files it
    read; a check with distances and one of win/draw/loss alone each have their own."""
    return f"{VERIFIED}/{layer_name(k1, k2)}-{'dtz' if distances else 'wdl'}.json"
