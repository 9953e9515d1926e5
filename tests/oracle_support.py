"""Helpers of the oracle tests: solve small tablebases, read the solver's own
tables whole, and compare every probe with them."""

from __future__ import annotations

import numpy as np

from bestemshe_dist.data.blocks import read_layer_codes
from bestemshe_dist.data.layer_files import decode_distances
from bestemshe_dist.data.store import Store
from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.position import Position
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.naming import layer_file, layer_name
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.tasks import Job
from bestemshe_dist.solve import code_arrays

NAMES = {code_arrays.WIN: "win", code_arrays.LOSS: "loss", code_arrays.UNKNOWN: "draw"}


def solve_into(client, url, stones, pits, dtz=False, min_captured=0, storage_options=None):
    variant = Variant(stones, pits)
    solve(
        client,
        Job(str(url), variant, storage_options=dict(storage_options or {}), dtz=dtz),
        make_plan(variant, min_captured),
    )
    return variant


def solver_tables(url, variant, storage_options=None):
    """{(k1, k2): (codes, distances or None)} decoded from whole files, as the solver reads them."""
    store = Store(str(url), storage_options)
    manifest = store.read_manifest()
    out = {}
    for key, entry in manifest["layers"].items():
        k1, k2 = map(int, key.split("_"))
        codes = read_layer_codes(store, variant, k1, k2)
        dtz = None
        if entry.get("dtz"):
            data = store.read_bytes(layer_file(k1, k2, "dtz"))
            dtz = decode_distances(
                data, variant.layer_size(k1, k2), entry["dtz"]["bytes_per_position"], k1, k2
            )
        out[(k1, k2)] = (codes, dtz)
    assert set(out) == {tuple(map(int, k.split("_"))) for k in manifest["layers"]}
    assert all(layer_name(*layer) in manifest["layers"] for layer in out)
    return out


def truth(tables, k1, k2, index):
    codes, dtz = tables[(k1, k2)]
    value = NAMES[int(code_arrays.get_code(codes, index))]
    distance = None if dtz is None or value == "draw" else int(dtz[index])
    return value, distance


def assert_every_probe_matches(tb, tables):
    """Probe every position of every layer; returns how many."""
    checked = 0
    for k1, k2 in sorted(tables):
        for index in range(tb.variant.layer_size(k1, k2)):
            pos = Position.from_rank(tb.variant, k1, k2, index)
            got = tb.probe(pos)
            assert (got.value, got.dtz) == truth(tables, k1, k2, index), (str(pos), index)
            checked += 1
    return checked


def layer_positions(variant, k1, k2, step=1):
    return [Position.from_rank(variant, k1, k2, x) for x in range(0, variant.layer_size(k1, k2), step)]


def random_positions(variant, tables, count, seed, value=None):
    """`count` positions drawn at random over the layers (only of `value` if given)."""
    rng = np.random.default_rng(seed)
    layers = sorted(tables)
    out = []
    while len(out) < count:
        k1, k2 = layers[rng.integers(len(layers))]
        x = int(rng.integers(variant.layer_size(k1, k2)))
        if value is None or truth(tables, k1, k2, x)[0] == value:
            out.append(Position.from_rank(variant, k1, k2, x))
    return out
