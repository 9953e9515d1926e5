"""`bestemshe-dist verify`: passes on the solver's tables, catches every injected
fault (naming layer and rank), and proves with distance tables what win/draw/loss
alone cannot (a cycle relabelled win/loss is consistent but not provable)."""

import hashlib
import json
import shutil
from collections import deque

import bruteforce as bf
import numpy as np
import pytest
from conftest import FIXTURE_M40, run_cli
from distributed import get_task_stream

from bestemshe_dist.data import format as fmt
from bestemshe_dist.data.blocks import read_layer_codes
from bestemshe_dist.data.checksums import FileSums, LayerSums, manifest_record
from bestemshe_dist.data.layer_files import encode_distances, encode_layer
from bestemshe_dist.data.store import Store
from bestemshe_dist.errors import BestemsheError
from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.geometry import capture_targets
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.naming import sums_file
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.tasks import Job
from bestemshe_dist.solve import code_arrays
from bestemshe_dist.verify import driver as vdriver
from bestemshe_dist.verify import tasks as vtasks
from bestemshe_dist.verify.driver import verify

SMALL = Variant(12, 3)


@pytest.fixture(scope="module")
def small_tb(client, tmp_path_factory):
    """The whole 12-stone, 3-pit game solved with distance tables (49 layers)."""
    folder = tmp_path_factory.mktemp("small-tb")
    solve(client, Job(str(folder), SMALL, dtz=True), make_plan(SMALL))
    return folder


@pytest.fixture
def tb(small_tb, tmp_path):
    """A private copy to damage."""
    folder = tmp_path / "tb"
    shutil.copytree(small_tb, folder, ignore=shutil.ignore_patterns(".bestemshe"))
    return folder


@pytest.fixture(scope="module")
def endgame(client, tmp_path_factory):
    """The 50-stone layers with k1 + k2 >= 40, with distance tables."""
    folder = tmp_path_factory.mktemp("endgame")
    variant = Variant(50, 5)
    solve(client, Job(str(folder), variant, dtz=True), make_plan(variant, 40))
    return folder


@pytest.fixture(params=["one pass", "two passes"])
def passes(request, monkeypatch):
    """Each layer checked in one pass, or as the largest layers of the game are:
    alone, its values first and then its distances, which are read a chunk's
    slice at a time."""
    if request.param == "two passes":
        force_two_passes(monkeypatch)
    return request.param


def force_two_passes(monkeypatch):
    monkeypatch.setattr(vdriver, "worker_bytes", lambda client: 1 << 40)
    monkeypatch.setattr(
        vdriver,
        "plan_passes",
        lambda run, budget: dict.fromkeys(run.checked, vtasks.VALUES if run.use_dtz else vtasks.BOTH),
    )
    monkeypatch.setattr(vtasks, "KEEP_DISTANCES_BYTES", 0)


# -- helpers -------------------------------------------------------------------------------
def manifest(folder):
    return json.loads((folder / "manifest.json").read_text())


def update_manifest(folder, layer, kind, data, counts=None):
    m = manifest(folder)
    entry = m["layers"][f"{layer[0]}_{layer[1]}"]
    entry["bytes"][kind] = len(data)
    entry["sha256"][kind] = hashlib.sha256(data).hexdigest()
    if counts is not None:
        entry["counts"] = counts
    (folder / "manifest.json").write_text(json.dumps(m))


def forge_checksums(folder, layer, with_manifest=True):
    """Write the layer's checksum file anew for its files as they are now: a
    rewritten file then looks as a faulty solver would have written it (valid
    frames, matching checksums), so only the check of values can catch it."""
    files = {}
    for kind in ("win", "draw", "dtz"):
        path = folder / f"layer_{layer[0]}_{layer[1]}_{kind}.bin"
        if path.exists():
            files[kind] = FileSums.of_file(path.read_bytes())
    sums = LayerSums(tuple(layer), files)
    sidecar = sums.to_bytes()
    (folder / sums_file(*layer)).write_bytes(sidecar)
    if with_manifest:
        m = manifest(folder)
        m["layers"][f"{layer[0]}_{layer[1]}"]["checksums"] = manifest_record(sums, sidecar)
        (folder / "manifest.json").write_text(json.dumps(m))


def drop_checksums(folder):
    """The tablebase as written before checksum files existed."""
    for path in folder.glob("*.sums.json"):
        path.unlink()
    m = manifest(folder)
    for entry in m["layers"].values():
        entry.pop("checksums", None)
    (folder / "manifest.json").write_text(json.dumps(m))


def codes_of(folder, variant, layer):
    return read_layer_codes(Store(str(folder)), variant, *layer)


def code_at(codes, rank):
    return int(code_arrays.get_code(codes, rank))


def put_code(codes, rank, code):
    w, shift = rank >> 5, np.uint64((rank & 31) * 2)
    codes[w] = (codes[w] & ~(np.uint64(3) << shift)) | (np.uint64(code) << shift)


def write_codes(folder, variant, layer, codes, with_manifest=True):
    """Re-encode a layer's win and draw files (valid files), optionally recording
    them (sizes, sha256, counts) in the manifest."""
    win, draw, (wins, draws, losses) = encode_layer(codes, variant.layer_size(*layer))
    for kind, data in (("win", win), ("draw", draw)):
        (folder / f"layer_{layer[0]}_{layer[1]}_{kind}.bin").write_bytes(data)
        if with_manifest:
            update_manifest(folder, layer, kind, data, {"win": wins, "draw": draws, "loss": losses})
    forge_checksums(folder, layer, with_manifest)


def read_bits(folder, variant, layer, kind):
    data = (folder / f"layer_{layer[0]}_{layer[1]}_{kind}.bin").read_bytes()
    return fmt.decode_file(data, kind, variant.layer_size(*layer))


def flip_bit(folder, variant, layer, kind, rank, with_manifest):
    """Flip one bit of a win or draw file and write it again as a valid file."""
    bits = read_bits(folder, variant, layer, kind)
    bits[rank // 8] ^= 1 << (rank % 8)
    data = fmt.encode_bitset(bits, variant.layer_size(*layer))
    (folder / f"layer_{layer[0]}_{layer[1]}_{kind}.bin").write_bytes(data)
    if with_manifest:
        win = read_bits(folder, variant, layer, "win")
        draw = read_bits(folder, variant, layer, "draw")
        n = variant.layer_size(*layer)
        wins = int(np.unpackbits(win).sum())
        draws = int(np.unpackbits(draw).sum())
        update_manifest(folder, layer, kind, data, {"win": wins, "draw": draws, "loss": n - wins - draws})
    forge_checksums(folder, layer, with_manifest)


def read_dtz(folder, variant, layer):
    entry = manifest(folder)["layers"][f"{layer[0]}_{layer[1]}"]
    width = entry["dtz"]["bytes_per_position"]
    data = (folder / f"layer_{layer[0]}_{layer[1]}_dtz.bin").read_bytes()
    raw = fmt.decode_file(data, "dtz", 8 * width * variant.layer_size(*layer))
    return raw.view(np.uint8 if width == 1 else "<u2").astype(np.int64), width


def write_dtz(folder, layer, dtz, width, with_manifest=True):
    data = encode_distances(dtz, width)
    (folder / f"layer_{layer[0]}_{layer[1]}_dtz.bin").write_bytes(data)
    forge_checksums(folder, layer, with_manifest)
    if with_manifest:
        update_manifest(folder, layer, "dtz", data)
        m = manifest(folder)
        m["layers"][f"{layer[0]}_{layer[1]}"]["dtz"]["max"] = int(dtz.max())
        (folder / "manifest.json").write_text(json.dumps(m))


def check(client, folder, **kwargs):
    lines = []
    report = verify(
        client, str(folder), chunk_size=kwargs.pop("chunk_size", 1000), log=lines.append, **kwargs
    )
    # a line a layer, and one more where earlier runs' records were taken
    assert len(lines) == report["layers_checked"] + bool(report["layers_from_earlier_runs"])
    return report


def faults(report, kind=None):
    out = [f for layer in report["layers"] for f in layer["faults"]] + report["other_faults"]
    return [f for f in out if kind is None or f["kind"] == kind]


def a_rank(folder, variant, layer, value):
    """The first rank of the layer holding `value` (and a move, so it has children)."""
    codes = codes_of(folder, variant, layer)
    for rank in range(variant.layer_size(*layer)):
        if code_at(codes, rank) == value:
            return rank
    raise AssertionError(f"no {value} in {layer}")


# -- passes ----------------------------------------------------------------------------------
def test_passes_on_the_solved_small_variant_as_a_proof(client, small_tb, passes):
    with get_task_stream(client) as stream:
        report = check(client, small_tb, chunk_size=700, fresh=True)
    assert report["passed"] and report["proof"], faults(report)
    assert report["failures"] == 0
    assert report["layers_checked"] == len(SMALL.layers)
    assert report["positions_checked"] == sum(SMALL.layer_size(*l) for l in SMALL.layers)
    m = manifest(small_tb)
    for layer in report["layers"]:
        assert layer["counts"] == m["layers"][layer["layer"]]["counts"]
        assert layer["max_dtz"] == m["layers"][layer["layer"]]["dtz"]["max"]
    assert "every value is proved" in report["summary"]
    keys = {t["key"].rsplit("-", 1)[0] for t in stream.data}  # without the run's tag
    assert {f"verify-0-0-chunk-{c}" for c in range(9)} <= keys  # 6,188 positions, 700 a chunk
    assert "verify-0-0-chunk-9" not in keys and "verify-files-6-6" in keys
    if passes == "two passes":
        assert {f"verify-0-0-chunk-{c}-distances" for c in range(9)} <= keys
        # 0_0 is the last layer: nothing waits after it
        assert {"verify-gate-values-0_0", "verify-gate-after-0_2", "verify-gate-before-0_0"} <= keys
        assert "verify-gate-after-0_0" not in keys
    else:
        assert not any("distances" in k or "gate" in k for k in keys)


def test_a_layer_too_large_for_one_pass_takes_two_and_one_too_large_for_two_is_refused(
    client, small_tb, monkeypatch
):
    chosen = {}
    planned = vdriver.plan_passes

    def plan(run, budget):
        chosen.update(planned(run, budget))
        return chosen

    def needs(layer, passes):
        spec = lambda l: vtasks.LayerSpec(*l, SMALL.layer_size(*l), None, 1)  # noqa: E731
        deps = tuple(spec(t) for t in capture_targets(SMALL, *layer))
        return vtasks.check_bytes(spec(layer), spec(layer[::-1]), deps, True, passes)

    layers = SMALL.layers
    # a budget that holds every layer's two passes, and not layer 0_0's one
    budget = max(max(needs(l, vtasks.VALUES), needs(l, vtasks.DISTANCES)) for l in layers)
    assert needs((0, 0), vtasks.BOTH) > budget
    monkeypatch.setattr(vdriver, "worker_bytes", lambda client: budget)
    monkeypatch.setattr(vdriver, "plan_passes", plan)
    report = check(client, small_tb, fresh=True)
    assert report["passed"] and report["proof"], faults(report)
    assert chosen[(0, 0)] == vtasks.VALUES and chosen[(6, 6)] == vtasks.BOTH
    assert {l for l, m in chosen.items() if m == vtasks.VALUES} == {
        l for l in layers if needs(l, vtasks.BOTH) > budget
    }
    monkeypatch.setattr(vdriver, "worker_bytes", lambda client: budget - 1)
    with pytest.raises(BestemsheError, match=r"^layer \d+_\d+ needs .* GiB in one worker to be checked, but"):
        check(client, small_tb, fresh=True)


@pytest.mark.parametrize("stones,pits", [(6, 1), (8, 2)])
def test_passes_on_other_small_variants(client, tmp_path, stones, pits):
    variant = Variant(stones, pits)
    solve(client, Job(str(tmp_path), variant, dtz=True), make_plan(variant))
    report = check(client, tmp_path, chunk_size=37)
    assert report["passed"] and report["proof"], faults(report)
    assert report["positions_checked"] == sum(variant.layer_size(*l) for l in variant.layers)


def test_passes_on_the_50_stone_endgame(client, endgame):
    report = check(client, endgame, chunk_size=50_000)
    assert report["passed"] and report["proof"] and report["layers_checked"] == 15
    assert report["positions_checked"] == 575_630
    assert sum(" OK " in line for line in report["lines"]) == 15


def test_command_line_pass_exits_0(tmp_path):
    assert (
        run_cli(
            "solve", "--stones", "6", "--pits", "1", "--dtz", "--out", tmp_path, "--workers", "1", "--quiet"
        ).returncode
        == 0
    )
    done = run_cli("verify", tmp_path, "--workers", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == len(Variant(6, 1).layers) + 1 and all(" OK " in line for line in lines[:-1])
    assert lines[-1].startswith("verified 4 layers, ") and "PASSED with distance tables" in lines[-1]
    assert "positions per core-second" in lines[-1]


def test_published_tables_without_distances_pass_as_consistency_only(client):
    report = check(client, FIXTURE_M40, variant_args=(50, 5))
    assert report["passed"] and not report["proof"] and not report["manifest"]
    assert "consistent, not that they are right" in report["summary"]
    assert "no manifest" in report["summary"]


def test_min_captured_and_wdl_only(client, small_tb):
    report = check(client, small_tb, min_captured=8, wdl_only=True)
    assert report["passed"] and not report["proof"] and not report["distances"]
    assert {l["layer"] for l in report["layers"]} == {f"{a}_{b}" for a, b in SMALL.layers if a + b >= 8}


# -- faults ----------------------------------------------------------------------------------
def test_a_flipped_win_bit_with_a_stale_manifest(client, tb):
    layer = (2, 4)
    rank = a_rank(tb, SMALL, layer, code_arrays.LOSS)
    flip_bit(tb, SMALL, layer, "win", rank, with_manifest=False)
    report = check(client, tb)
    assert not report["passed"]
    sha = faults(report, "sha256")
    assert sha and sha[0]["layer"] == "2_4" and "layer_2_4_win.bin" in sha[0]["message"]
    wrong = [f for f in faults(report, "value") if f["layer"] == "2_4" and f["rank"] == rank]
    assert wrong and wrong[0]["stored"]["value"] == "win" and wrong[0]["expected"]["value"] == "loss"
    assert f"rank {rank} position [" in wrong[0]["message"]


@pytest.mark.parametrize("kind,value", [("win", code_arrays.LOSS), ("draw", 0), ("draw", code_arrays.LOSS)])
def test_a_flipped_bit_in_a_valid_file_and_manifest_is_caught_by_positions(client, tb, kind, value, passes):
    layer = (0, 2) if value == 0 else (4, 2)
    rank = a_rank(tb, SMALL, layer, value)
    flip_bit(tb, SMALL, layer, kind, rank, with_manifest=True)
    report = check(client, tb)
    assert not report["passed"]
    found = faults(report)
    assert {f["kind"] for f in found} == {"value"}, found  # the files themselves are in order
    assert any(f["layer"] == f"{layer[0]}_{layer[1]}" and f["rank"] == rank for f in found)


def test_a_win_bit_set_on_a_draw_is_marked_both(client, tb):
    layer = (0, 2)
    rank = a_rank(tb, SMALL, layer, 0)
    flip_bit(tb, SMALL, layer, "win", rank, with_manifest=True)
    report = check(client, tb)
    both = faults(report, "both")
    assert both and both[0]["rank"] == rank and "marked both win and draw" in both[0]["message"]
    # Layers whose moves lead into it cannot be checked, and say so.
    assert any(
        f["kind"] == "dependency" and "layer 0_2 cannot be read" in f["message"] for f in faults(report)
    )


@pytest.mark.parametrize("change", [+1, -1, "bit"])
def test_a_wrong_distance_is_caught(client, tb, change, passes):
    layer = (2, 2)
    dtz, width = read_dtz(tb, SMALL, layer)
    rank = int(np.flatnonzero(dtz >= 2)[0])
    dtz[rank] = dtz[rank] + change if change != "bit" else dtz[rank] ^ 4
    write_dtz(tb, layer, dtz, width, with_manifest=True)
    report = check(client, tb)
    assert not report["passed"]
    found = [f for f in faults(report, "dtz") if f["layer"] == "2_2" and f["rank"] == rank]
    assert found, faults(report)
    assert found[0]["stored"]["dtz"] == dtz[rank] and found[0]["expected"]["dtz"] != dtz[rank]
    assert not faults(report, "value")


def test_a_dtz_file_flip_with_stale_manifest_reports_sha_too(client, tb):
    layer = (4, 4)
    dtz, width = read_dtz(tb, SMALL, layer)
    rank = int(np.flatnonzero(dtz >= 1)[0])
    dtz[rank] ^= 1
    write_dtz(tb, layer, dtz, width, with_manifest=False)
    report = check(client, tb)
    kinds = {f["kind"] for f in faults(report)}
    assert "sha256" in kinds and "dtz" in kinds


def test_swapped_files_of_a_pair(client, tb):
    drop_checksums(tb)  # else the checksums catch it first (test_verify_checks_every_frame)
    a, b = tb / "layer_2_4_win.bin", tb / "layer_4_2_win.bin"
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    report = check(client, tb)
    assert not report["passed"]
    sha_layers = {f["layer"] for f in faults(report, "sha256")}
    assert sha_layers == {"2_4", "4_2"}
    assert any(f["layer"] in ("2_4", "4_2") and "rank" in f for f in faults(report, "value"))


def test_swapped_files_recorded_in_the_manifest_are_still_caught(client, tb):
    drop_checksums(tb)
    for kind in ("win", "draw", "dtz"):
        a, b = tb / f"layer_2_4_{kind}.bin", tb / f"layer_4_2_{kind}.bin"
        data_a, data_b = a.read_bytes(), b.read_bytes()
        a.write_bytes(data_b)
        b.write_bytes(data_a)
    m = manifest(tb)
    m["layers"]["2_4"], m["layers"]["4_2"] = m["layers"]["4_2"], m["layers"]["2_4"]
    for key in ("2_4", "4_2"):
        m["layers"][key]["k1"], m["layers"][key]["k2"] = (int(k) for k in key.split("_"))
    (tb / "manifest.json").write_text(json.dumps(m))
    report = check(client, tb)
    assert not report["passed"]
    assert not faults(report, "sha256")
    assert any("rank" in f and f["layer"] in ("2_4", "4_2") for f in faults(report))


def test_a_truncated_file(client, tb):
    path = tb / "layer_4_4_draw.bin"
    path.write_bytes(path.read_bytes()[:-7])
    report = check(client, tb)
    assert not report["passed"]
    found = [f for f in faults(report) if f["layer"] == "4_4"]
    kinds = {f["kind"] for f in found}
    assert {"size", "format"} <= kinds, found
    assert any("layer_4_4_draw.bin" in f["message"] for f in found if f["kind"] == "format")
    # Layers that capture into 4_4 are not checked, and say why.
    assert any(
        f["kind"] == "dependency" and "layer 4_4 cannot be read" in f["message"] for f in faults(report)
    )


def test_a_missing_dependency_layer(client, tb):
    for kind in ("win", "draw", "dtz"):
        (tb / f"layer_4_6_{kind}.bin").unlink()
    m = manifest(tb)
    del m["layers"]["4_6"]
    (tb / "manifest.json").write_text(json.dumps(m))
    report = check(client, tb)
    assert not report["passed"]
    needs = [f for f in faults(report, "dependency") if "needs layer 4_6" in f["message"]]
    # Its partner (6_4) and the layers (k1, 4) whose captures reach (4, k1 + c) = (4, 6).
    assert {f["layer"] for f in needs} == {"6_4", "0_4", "2_4", "4_4"}, needs


def test_a_layer_in_the_manifest_without_files(client, tb):
    (tb / "layer_6_6_win.bin").unlink()
    report = check(client, tb)
    found = [f for f in faults(report, "file") if f["layer"] == "6_6"]
    assert found and "layer_6_6_win.bin: it does not exist" in found[0]["message"]


# -- a cycle relabelled win/loss: consistent, but not provable -----------------------------
def relabelled_cycle(stones, pits):
    """Draws that can be relabelled win/loss so that every position still agrees with
    its children (a fixpoint of the min-max rule other than the least one): seed one
    draw as a LOSS, propagate (predecessors of a LOSS win, positions whose every move
    reaches a WIN lose) and keep it if the seed's own moves all reach WINs.
    Returns {(k1, k2, board): 'W' | 'L'} or None."""
    states, _index, moves = bf._build_graph(stones, pits)
    value = bf._retrograde(states, moves)
    preds = [[] for _ in states]
    for s, ms in enumerate(moves):
        for m in ms:
            if m[0] == "child":
                preds[m[1]].append(s)
    for seed in (s for s in range(len(states)) if value[s] == bf.DRAW):
        label = list(value)
        label[seed] = bf.LOSS
        queue = deque([seed])
        while queue:
            c = queue.popleft()
            for p in preds[c]:
                if label[p] != bf.DRAW:
                    continue
                if label[c] == bf.LOSS:
                    label[p] = bf.WIN
                    queue.append(p)
                elif all(m[0] == "child" and label[m[1]] == bf.WIN for m in moves[p]):
                    label[p] = bf.LOSS
                    queue.append(p)
        if all(m[0] == "child" and label[m[1]] == bf.WIN for m in moves[seed]):
            return {states[s]: label[s] for s in range(len(states)) if label[s] != value[s]}
    return None


@pytest.mark.parametrize("stones,pits", [(6, 1), (8, 3)])
def test_a_relabelled_cycle_passes_wdl_but_fails_with_distances(client, tmp_path, stones, pits, passes):
    variant = Variant(stones, pits)
    relabel = relabelled_cycle(stones, pits)
    assert relabel, "this variant has such a cycle (6 stones 1 pit: two positions that move into each other)"
    solve(client, Job(str(tmp_path), variant, dtz=True), make_plan(variant))
    layers = {(k1, k2) for k1, k2, _ in relabel}
    code = {"W": code_arrays.WIN, "L": code_arrays.LOSS}
    for layer in layers:
        codes = codes_of(tmp_path, variant, layer)
        for (k1, k2, board), v in relabel.items():
            if (k1, k2) == layer:
                assert code_at(codes, bf.rank(board)) == 0  # it was a draw
                put_code(codes, bf.rank(board), code[v])
        write_codes(tmp_path, variant, layer, codes)
    wdl = check(client, tmp_path, wdl_only=True)
    assert wdl["passed"] and not wdl["proof"], faults(wdl)
    assert "consistent, not that they are right" in wdl["summary"]
    # Whatever distances are stored, a cycle cannot descend: try the stored zeros,
    # then distances made to agree with their children as far as possible.
    for _attempt in range(2):
        full = check(client, tmp_path)
        assert not full["passed"]
        found = faults(full)
        assert found and {f["kind"] for f in found} == {"dtz"}, found
        # The relabelled position with the smallest stored distance always fails: a
        # relabelled WIN's LOSS child, and one WIN child of a relabelled LOSS, are
        # relabelled too (else the position was no draw), and would be closer still.
        relabelled = {(f"{k1}_{k2}", bf.rank(b)) for k1, k2, b in relabel}
        assert any((f["layer"], f["rank"]) in relabelled for f in found)
        for f in found:  # store what each failing position expects
            layer = tuple(int(k) for k in f["layer"].split("_"))
            dtz, width = read_dtz(tmp_path, variant, layer)
            dtz[f["rank"]] = f["expected"]["dtz"]
            write_dtz(tmp_path, layer, dtz, width)


def test_the_cycle_search_finds_nothing_without_draws():
    assert relabelled_cycle(6, 2) is None  # 6 stones, 2 pits: no draw at all


# -- sampling ----------------------------------------------------------------------------------
def test_sample_passes_and_catches_a_fault_when_it_looks_there(client, tb):
    report = check(client, tb, sample=50, seed=7)
    assert report["passed"] and not report["proof"] and report["mode"] == "sample"
    assert report["positions_checked"] == sum(min(50, SMALL.layer_size(*l)) for l in SMALL.layers)
    assert "a sample, not a proof" in report["summary"]
    layer = (2, 4)
    rank = a_rank(tb, SMALL, layer, code_arrays.LOSS)
    flip_bit(tb, SMALL, layer, "win", rank, with_manifest=True)
    report = check(client, tb, sample=10**6, seed=1)  # more than any layer: every position
    assert any(f["layer"] == "2_4" and f.get("rank") == rank for f in faults(report, "value"))
    dtz, width = read_dtz(tb, SMALL, (2, 2))
    rank = int(np.flatnonzero(dtz >= 2)[0])
    dtz[rank] += 1
    write_dtz(tb, (2, 2), dtz, width, with_manifest=False)
    report = check(client, tb, sample=10**6, seed=1)
    assert any(f["layer"] == "2_2" and f.get("rank") == rank for f in faults(report, "dtz"))
    assert not faults(report, "sha256")  # a sample reads headers and sizes, not whole files


# -- the command line -------------------------------------------------------------------------
def test_command_line_fault_names_the_rank_and_exits_1(endgame, tmp_path):
    """One bit flipped in one block of a 50-stone layer (files and manifest kept valid)."""
    folder = tmp_path / "tb"
    shutil.copytree(endgame, folder, ignore=shutil.ignore_patterns(".bestemshe"))
    variant = Variant(50, 5)
    layer = (18, 22)
    codes = codes_of(folder, variant, layer)
    rank = next(r for r in range(1000, variant.layer_size(*layer)) if code_at(codes, r) == code_arrays.WIN)
    flip_bit(folder, variant, layer, "win", rank, with_manifest=True)
    done = run_cli("verify", folder, "--workers", "1", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    text = done.stderr  # with --json the lines go to stderr, the report to stdout
    assert f"layer 18_22 rank {rank} position [" in text and "stored LOSS" in text and "expected WIN" in text
    assert any(line.startswith("layer 18_22 ") and " FAIL " in line for line in text.splitlines())
    assert text.strip().splitlines()[-1].startswith("verified 15 layers") and "FAILED" in text
    report = json.loads(done.stdout)
    assert not report["passed"] and report["failures"] >= 1
    wrong = [f for f in faults(report) if f.get("rank") == rank]
    assert wrong[0]["layer"] == "18_22" and wrong[0]["stored"] == {
        "value": "loss",
        "dtz": wrong[0]["stored"]["dtz"],
    }
    assert wrong[0]["expected"]["value"] == "win" and len(wrong[0]["position"]) == 10


@pytest.mark.parametrize(
    "args,needle,code",
    [
        (["--sample", "0"], "argument --sample: must be at least 1, not 0", 2),
        (["--min-captured", "99"], "--min-captured must be from 0 to 12 for the 12-stone game", 2),
        (["--stones", "14"], "--stones 14 does not match it", 2),
        (["--chunk-size", "0"], "argument --chunk-size: must be at least 1, not 0", 2),
    ],
)
def test_usage_errors_are_one_line(small_tb, args, needle, code):
    done = run_cli("verify", small_tb, *args)
    assert done.returncode == code
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], done.stderr


def test_an_empty_folder_and_a_secret_url_are_one_sentence(tmp_path):
    done = run_cli("verify", tmp_path)
    assert done.returncode == 1 and done.stderr.strip().endswith(
        "holds no tablebase: no manifest.json and no layer_<k1>_<k2>_win.bin files are there."
    )
    assert len(done.stderr.strip().splitlines()) == 1
    done = run_cli("verify", "memory://user:hunter2@nowhere/tb")
    assert done.returncode == 1 and "hunter2" not in done.stderr + done.stdout
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


# -- a verification over many runs ---------------------------------------------------------------
def records_in(folder):
    return sorted(p.name for p in (folder / ".bestemshe" / "verified").glob("*.json"))


def test_a_rerun_skips_the_layers_that_passed_on_the_same_files(client, tb):
    first = check(client, tb)
    assert first["passed"] and first["proof"] and first["layers_from_earlier_runs"] == 0
    assert records_in(tb) == sorted(f"{a}_{b}-dtz.json" for a, b in SMALL.layers)

    # An interrupted run: the layers it had not finished have no record.
    undone = [(0, 0), (0, 2), (2, 0)]
    for layer in undone:
        (tb / ".bestemshe" / "verified" / f"{layer[0]}_{layer[1]}-dtz.json").unlink()
    lines = []
    with get_task_stream(client) as stream:
        again = verify(client, str(tb), chunk_size=1000, log=lines.append)
    assert again["passed"] and again["proof"]
    assert again["layers_from_earlier_runs"] == len(SMALL.layers) - len(undone)
    assert again["positions_checked"] == first["positions_checked"]
    assert [l["counts"] for l in again["layers"]] == [l["counts"] for l in first["layers"]]
    assert f"{len(SMALL.layers) - len(undone)} layers verified by earlier runs on the same files" in lines[0]
    assert "by earlier runs on the same files" in again["summary"]
    checked = {t["key"].split("-chunk-")[0] for t in stream.data if "-chunk-" in t["key"]}
    assert checked == {f"verify-{a}-{b}" for a, b in undone}  # only they were checked again
    assert records_in(tb) == sorted(f"{a}_{b}-dtz.json" for a, b in SMALL.layers)

    fresh = verify(client, str(tb), chunk_size=1000, fresh=True)
    assert fresh["passed"] and fresh["layers_from_earlier_runs"] == 0
    wdl = verify(client, str(tb), chunk_size=1000, wdl_only=True)  # another mode: its own records
    assert wdl["layers_from_earlier_runs"] == 0 and not wdl["proof"]


def test_a_record_binds_the_files_a_check_read(client, tb):
    assert check(client, tb)["passed"]
    # A file changed after its record (manifest and sidecar kept consistent, as a
    # faulty solver would write them): the record no longer binds, the values fail.
    variant, layer = SMALL, (2, 2)
    codes = codes_of(tb, variant, layer)
    rank = next(r for r in range(variant.layer_size(*layer)) if code_at(codes, r) == code_arrays.WIN)
    flip_bit(tb, variant, layer, "win", rank, with_manifest=True)
    report = verify(client, str(tb), chunk_size=1000)
    assert not report["passed"]
    failed = {l["layer"] for l in report["layers"] if not l["passed"]}
    assert "2_2" in failed
    # Every layer whose check reads 2_2 (itself, its partner, what captures into it) is checked again.
    readers = {
        f"{a}_{b}" for a, b in SMALL.layers if (2, 2) in [(a, b), (b, a), *capture_targets(SMALL, a, b)]
    }
    assert len(readers) > 1
    skipped = {l["layer"] for l in report["layers"] if "earlier run" in l["note"]}
    assert skipped == {f"{a}_{b}" for a, b in SMALL.layers} - readers
    assert report["layers_from_earlier_runs"] == len(skipped)


def test_command_line_rerun_says_it_skipped(tmp_path):
    assert (
        run_cli("solve", "--stones", "6", "--pits", "1", "--dtz", "--out", tmp_path, "--quiet").returncode
        == 0
    )
    assert run_cli("verify", tmp_path, "--workers", "1").returncode == 0
    done = run_cli("verify", tmp_path, "--workers", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == (
        "4 layers verified by earlier runs on the same files: their positions are not checked again "
        "(--fresh checks them)"
    )
    assert all("verified by an earlier run on the same files" in line for line in lines[1:-1])
    assert "PASSED with distance tables" in lines[-1]
    done = run_cli("verify", tmp_path, "--workers", "1", "--fresh")
    assert done.returncode == 0 and "earlier" not in done.stdout
