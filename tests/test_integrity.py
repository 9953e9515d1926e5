"""A damaged tablebase is never answered silently: checksum files (format and
round trips), every reader checking them (probe, best move, play, verify
--sample, the solver's dependency layers), the children cross-check where there
are none, and the `checksums` command that writes them for the published files."""

import hashlib
import io
import json
import shutil
import uuid

import numpy as np
import pytest
from conftest import FIXTURE_M40, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from bestemshe_dist import Position, Tablebase
from bestemshe_dist.cli import main
from bestemshe_dist.data import format as fmt
from bestemshe_dist.data.blocks import read_layer_codes
from bestemshe_dist.data.checksums import FileSums, LayerSums, digest
from bestemshe_dist.data.store import Store
from bestemshe_dist.errors import FormatError
from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.naming import sums_file
from bestemshe_dist.run import hostmem
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.hostpair import dep_bundle
from bestemshe_dist.run.tasks import Job

V = Variant(50, 5)
LAYER = (12, 24)  # the largest layer with k1 + k2 >= 36: 817,190 positions
WIN_FILE = "layer_12_24_win.bin"


@pytest.fixture(scope="module")
def m36(client, tmp_path_factory):
    """The 50-stone endgame, k1 + k2 >= 36, as `solve` writes it (manifest, checksums)."""
    folder = tmp_path_factory.mktemp("m36")
    solve(client, Job(str(folder), V), make_plan(V, 36))
    return folder


def _copy(src, dst, bare=False):
    """A copy to damage; `bare`: only the layer files, as the published dataset."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".bestemshe", "README.md"))
    if bare:
        for path in list(dst.glob("*.json")):
            path.unlink()
    return dst


def overwrite_mid_frame(path, block=0, seed=0):
    """Overwrite 32 bytes in the middle of one frame so that it still decompresses,
    to other bits. Returns the byte offsets (in the block) whose bits changed."""
    data = bytearray(path.read_bytes())
    offsets = fmt.parse_header(data, len(data), path.name)
    lo, hi = int(offsets[block]), int(offsets[block + 1])
    before = np.frombuffer(fmt.decode_block(bytes(data[lo:hi]), "x", block), np.uint8)
    rng = np.random.default_rng(seed)
    for start in range((lo + hi) // 2, hi - 32):
        damaged = bytearray(data)
        damaged[start : start + 32] = rng.integers(0, 256, 32, dtype=np.uint8).tobytes()
        try:
            after = np.frombuffer(fmt.decode_block(bytes(damaged[lo:hi]), "x", block), np.uint8)
        except FormatError:
            continue
        changed = np.flatnonzero(after != before)
        if changed.size:
            path.write_bytes(bytes(damaged))
            return changed
    raise AssertionError(f"no overwrite of {path.name} block {block} still decompresses")


def truncate_mid_frame(path):
    data = path.read_bytes()
    offsets = fmt.parse_header(data, len(data), path.name)
    path.write_bytes(data[: (int(offsets[-2]) + int(offsets[-1])) // 2])


def change_header(path):
    data = bytearray(path.read_bytes())
    data[4] ^= 1  # the first frame's offset
    path.write_bytes(bytes(data))


def stale_sidecar(folder):
    """The layer's checksum file as taken of another version of its win file."""
    path = folder / WIN_FILE
    good = path.read_bytes()
    overwrite_mid_frame(path)
    files = {
        "win": FileSums.of_file(path.read_bytes()),
        "draw": FileSums.of_file((folder / "layer_12_24_draw.bin").read_bytes()),
    }
    (folder / sums_file(*LAYER)).write_bytes(LayerSums(LAYER, files).to_bytes())
    path.write_bytes(good)


def _without_checksums(folder):
    """The tablebase as written before checksum files existed."""
    manifest = json.loads((folder / "manifest.json").read_text())
    for entry in manifest["layers"].values():
        del entry["checksums"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    for path in folder.glob("*.sums.json"):
        path.unlink()
    return folder


def missing_sidecar(folder):
    (folder / sums_file(*LAYER)).unlink()


DAMAGE = {
    "frame overwritten mid-way": (lambda f: overwrite_mid_frame(f / WIN_FILE), "block 0 fails its checksum"),
    "frame truncated": (lambda f: truncate_mid_frame(f / WIN_FILE), f"{WIN_FILE}: the file is cut short"),
    "header changed": (lambda f: change_header(f / WIN_FILE), f"{WIN_FILE}: its header"),
    "sidecar stale": (stale_sidecar, "block 0 fails its checksum"),
    "sidecar missing": (missing_sidecar, f"{sums_file(*LAYER)} is missing"),
}
POSITION = "12 24 3 1 4 3 0 0 1 0 2 0"  # rank 616,971 of layer 12_24: block 0


def _cli(capsys, *args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def _no_value(text):
    return not any(word in text.split() for word in ("win", "draw", "loss", "win:", "loss:", "draw:"))


# -- the checksum file ------------------------------------------------------------------------
def test_sidecar_round_trip_and_what_it_covers(m36):
    data = (m36 / WIN_FILE).read_bytes()
    sums = FileSums.of_file(data)
    offsets = fmt.parse_header(data, len(data), WIN_FILE)
    assert sums.size == len(data) and len(sums.frames) == len(offsets) - 1
    assert sums.header == digest(data[: offsets[0]]) and sums.frames[0] == digest(
        data[offsets[0] : offsets[1]]
    )
    raw = (m36 / sums_file(*LAYER)).read_bytes()
    parsed = LayerSums.from_bytes(raw, LAYER, "x")
    assert parsed.files["win"] == sums and LayerSums.from_bytes(parsed.to_bytes(), LAYER, "x") == parsed
    entry = json.loads((m36 / "manifest.json").read_text())["layers"]["12_24"]
    assert entry["checksums"] == {
        "hash": "blake2b-128",
        "file": "layer_12_24.sums.json",
        "bytes": len(raw),
        "sha256": hashlib.sha256(raw).hexdigest(),
    }
    # Every layer the solve wrote has its checksum file.
    for key in json.loads((m36 / "manifest.json").read_text())["layers"]:
        assert (m36 / f"layer_{key}.sums.json").exists()


@pytest.mark.parametrize(
    "text,needle",
    [
        ("nonsense", "not a valid checksum file"),
        ('{"format": "other"}', "not a checksum file"),
        (
            '{"format": "bestemshe-checksums", "hash": "md5", "layer": [12, 24], "files": {}}',
            "is not blake2b-128",
        ),
        (
            '{"format": "bestemshe-checksums", "hash": "blake2b-128", "layer": [24, 12], "files": {}}',
            "it is for layer [24, 12]",
        ),
        (
            '{"format": "bestemshe-checksums", "hash": "blake2b-128", "layer": [12, 24], '
            '"files": {"win": {"bytes": 9, "header": "ab", "frames": ["cd"]}}}',
            "digests are malformed",
        ),
    ],
)
def test_a_bad_sidecar_is_one_sentence(text, needle):
    with pytest.raises(FormatError) as err:
        LayerSums.from_bytes(text.encode(), LAYER, "tb/layer_12_24.sums.json")
    assert needle in str(err.value)
    assert str(err.value).startswith("tb/layer_12_24.sums.json is not a valid checksum file for layer 12_24")


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=300), st.data())
def test_any_changed_byte_of_a_frame_fails_its_checksum(frame, data):
    sums = FileSums(0, "0" * 32, (digest(frame),))
    sums.check_frame(0, frame, "f")
    at = data.draw(st.integers(0, len(frame) - 1))
    value = data.draw(st.integers(0, 255).filter(lambda b: b != frame[at]))
    damaged = frame[:at] + bytes([value]) + frame[at + 1 :]
    with pytest.raises(FormatError, match="f: block 0 fails its checksum"):
        sums.check_frame(0, damaged, "f")


# -- every reader refuses a damaged block ------------------------------------------------------
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_probe_best_move_and_play_refuse_a_damaged_tablebase(m36, tmp_path, capsys, monkeypatch, damage):
    harm, needle = DAMAGE[damage]
    folder = _copy(m36, tmp_path / "tb")
    harm(folder)
    shown = f"{folder}/{WIN_FILE}" if "sidecar missing" not in damage else f"{folder}/{sums_file(*LAYER)}"

    for args in (["probe", folder, *POSITION.split()], ["probe", folder, "--json", *POSITION.split()]):
        rc, out, err = _cli(capsys, *args)
        assert rc == 1 and out == "" and err.count("\n") == 1, err
        assert needle in err and shown in err, err

    tb = Tablebase.open(str(folder))
    with pytest.raises(FormatError, match=needle):
        tb.best_move(POSITION)
    with pytest.raises(FormatError, match=needle):
        tb.probe(POSITION)

    monkeypatch.setattr("sys.stdin", io.StringIO("1\n2\n3\nq\n"))
    rc, out, err = _cli(capsys, "play", folder, "--start", POSITION)
    assert rc == 1 and err.count("\n") == 1 and needle in err, err
    assert _no_value(out) and "Tablebase:" not in out, out  # the banner only


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_verify_sample_and_verify_refuse_a_damaged_tablebase(m36, tmp_path, damage):
    harm, needle = DAMAGE[damage]
    folder = _copy(m36, tmp_path / "tb")
    harm(folder)
    done = run_cli("verify", folder, "--sample", "20", "--seed", "1", "--workers", "1", "--quiet")
    assert done.returncode == 1, done.stdout + done.stderr
    assert needle in done.stdout and "FAILED" in done.stdout.splitlines()[-1], done.stdout
    if damage == "frame overwritten mid-way":  # the acceptance case, checked in full too
        done = run_cli("verify", folder, "--workers", "1", "--quiet")
        assert done.returncode == 1 and f"{folder}/{WIN_FILE}: block 0 fails its checksum" in done.stdout


def test_the_solver_refuses_a_damaged_dependency_layer(m36, tmp_path):
    folder = _copy(m36, tmp_path / "tb")
    overwrite_mid_frame(folder / WIN_FILE)
    job = Job(str(folder), V, space=f"test-{uuid.uuid4().hex}")
    space = hostmem.space(job.space)
    try:
        # Layer 22_12's only capture target is 12_24: loading it into host memory checks it.
        with pytest.raises(FormatError, match=f"{WIN_FILE}: block 0 fails its checksum"):
            dep_bundle(space, job, job.dep_source, 22, 12, {})
        assert not space.has("row-12-24")  # nothing half-loaded is taken for the layer
    finally:
        space.remove()
    missing_sidecar(folder)
    with pytest.raises(FormatError, match=r"layer_12_24\.sums\.json is missing"):
        read_layer_codes(Store(str(folder)), V, *LAYER)


# -- without checksums: unverified, and a contradiction is still refused --------------------------
def test_without_checksums_answers_say_unverified(capsys):
    rc, out, _ = _cli(capsys, "probe", FIXTURE_M40, "20", "20", *["1"] * 10)
    assert rc == 0 and "checked   unverified: this tablebase has no checksums" in out
    rc, out, _ = _cli(capsys, "probe", FIXTURE_M40, "--json", "20", "20", *["1"] * 10)
    data = json.loads(out)
    assert data["verified"] is False and data["checksums"] is None


def test_a_damaged_block_without_checksums_is_caught_by_its_moves(m36, tmp_path, capsys):
    folder = _copy(m36, tmp_path / "bare", bare=True)
    changed = overwrite_mid_frame(folder / WIN_FILE)
    good, bad = Tablebase.open(str(m36)), Tablebase.open(str(folder))
    differ = [Position.from_rank(V, *LAYER, 8 * int(b) + i) for b in changed[:40] for i in range(8)]
    differ = [p for p in differ if good.probe(p) != bad.probe(p)]
    assert differ
    for pos in differ:
        with pytest.raises(
            FormatError, match=f"{WIN_FILE} block 0 .or the draw file's.: position {pos} is stored as"
        ):
            bad.analyse(pos)
    rc, out, err = _cli(capsys, "probe", folder, str(differ[0]))
    assert rc == 1 and out == "" and "so that block or a block of one of its children is damaged" in err


# -- `bestemshe-dist checksums` ----------------------------------------------------------------------
def test_checksums_for_the_published_files(tmp_path, capsys):
    folder = _copy(FIXTURE_M40, tmp_path / "pub")
    rc, out, _ = _cli(capsys, "checksums", folder)
    assert rc == 0 and out.strip().endswith(
        "15 layers, 15 written, 0 unchanged, 0 failed (blake2b-128, "
        + out.strip().rsplit("blake2b-128, ", 1)[1]
    )
    assert len(list(folder.glob("*.sums.json"))) == 15
    for path in FIXTURE_M40.glob("*.bin"):
        assert (folder / path.name).read_bytes() == path.read_bytes()  # files untouched
    rc, out, _ = _cli(capsys, "probe", folder, "--json", "20", "20", *["1"] * 10)
    assert rc == 0 and json.loads(out)["verified"] is True
    rc, out, _ = _cli(capsys, "checksums", folder)
    assert rc == 0 and "0 written, 15 unchanged" in out

    overwrite_mid_frame(folder / "layer_16_24_win.bin")
    rc, out, err = _cli(capsys, "probe", folder, "16", "24", *(["1"] * 9 + ["1"]))
    assert rc == 1 and "layer_16_24_win.bin: block 0 fails its checksum" in err
    rc, out, _ = _cli(capsys, "checksums", folder)
    assert rc == 1 and "layer 16_24: FAILED" in out and "layer_16_24.sums.json does not match" in out
    rc, out, _ = _cli(capsys, "checksums", folder, "--rewrite")  # the user trusts these files now
    assert rc == 0 and "1 written, 14 unchanged" in out


def test_checksums_upgrades_a_tablebase_written_without_them(m36, tmp_path, capsys):
    folder = _without_checksums(_copy(m36, tmp_path / "old"))
    rc, out, _ = _cli(capsys, "probe", folder, "--json", *POSITION.split())
    assert rc == 0 and json.loads(out)["verified"] is False
    (folder / "layer_24_12_draw.bin").write_bytes(b"\0" * 8)  # not the file the manifest vouches for
    rc, out, _ = _cli(capsys, "checksums", folder)
    assert rc == 1 and "layer_24_12_draw.bin does not match the sha256 its manifest records" in out
    shutil.copyfile(m36 / "layer_24_12_draw.bin", folder / "layer_24_12_draw.bin")
    rc, out, _ = _cli(capsys, "checksums", folder)
    assert rc == 0 and "1 written, 27 unchanged" in out  # the others were written by the first run
    for path in m36.glob("*.sums.json"):
        assert (folder / path.name).read_bytes() == path.read_bytes()  # what the solver wrote
    records = {
        k: e["checksums"] for k, e in json.loads((folder / "manifest.json").read_text())["layers"].items()
    }
    assert records == {
        k: e["checksums"] for k, e in json.loads((m36 / "manifest.json").read_text())["layers"].items()
    }


def test_a_resumed_solve_writes_checksums_for_layers_published_without_them(m36, tmp_path, client):
    folder = _without_checksums(_copy(m36, tmp_path / "old"))
    summary = solve(client, Job(str(folder), V), make_plan(V, 36))  # resumes: every layer kept
    assert summary.layers_skipped == 28 and summary.layers_solved == 0
    for path in m36.glob("*.sums.json"):
        assert (folder / path.name).read_bytes() == path.read_bytes()
    layers = json.loads((folder / "manifest.json").read_text())["layers"]
    assert layers == json.loads((m36 / "manifest.json").read_text())["layers"]


@pytest.mark.parametrize(
    "url,needle,code",
    [
        ("http://127.0.0.1:9/tb", "checksums writes files beside the layers", 2),
        ("EMPTY", "holds no tablebase: no manifest.json and no layer_<k1>_<k2>_win.bin files are there.", 1),
    ],
)
def test_checksums_bad_urls_are_one_sentence(tmp_path, capsys, url, needle, code):
    url = tmp_path if url == "EMPTY" else url
    rc, out, err = _cli(capsys, "checksums", url)
    assert rc == code and out == "" and err.count("\n") == 1 and needle in err
