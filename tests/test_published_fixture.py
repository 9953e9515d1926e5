"""A 50-stone solve of the layers with k1 + k2 >= 40 equals the published files
byte for byte (SPEC.md: same names, same header, level-19 frames)."""

import hashlib
import json

from conftest import FIXTURE_M40

from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.tasks import Job


def test_m40_equals_published_tablebase(client, tmp_path):
    variant = Variant(50, 5)
    solve(client, Job(str(tmp_path), variant), make_plan(variant, 40))
    published = sorted(p.name for p in FIXTURE_M40.glob("*.bin"))
    assert len(published) == 30
    assert sorted(p.name for p in tmp_path.glob("*.bin")) == published
    for name in published:
        assert (tmp_path / name).read_bytes() == (FIXTURE_M40 / name).read_bytes(), name

    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert len(manifest["layers"]) == 15
    for key, entry in manifest["layers"].items():
        k1, k2 = map(int, key.split("_"))
        assert entry["positions"] == variant.layer_size(k1, k2)
        assert sum(entry["counts"].values()) == entry["positions"]
        assert entry["counts"]["draw"] == 0  # no draws this deep into the game
        for kind in ("win", "draw"):
            data = (tmp_path / f"layer_{k1}_{k2}_{kind}.bin").read_bytes()
            assert entry["bytes"][kind] == len(data)
            assert entry["sha256"][kind] == hashlib.sha256(data).hexdigest()


def test_memory_store_in_process(client):
    """memory:// works for tests and notebooks (workers are threads of this process)."""
    import fsspec

    variant = Variant(50, 5)
    url = "memory://bestemshe-test/m44"
    solve(client, Job(url, variant), make_plan(variant, 44))
    fs = fsspec.filesystem("memory")
    for name in ("layer_24_24_win.bin", "layer_20_24_draw.bin", "layer_22_22_win.bin"):
        assert fs.cat_file(f"/bestemshe-test/m44/{name}") == (FIXTURE_M40 / name).read_bytes()
