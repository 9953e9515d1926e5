"""The command line: usage errors are one line and exit 2, failures exit 1."""
import json

import pytest

from conftest import run_cli


@pytest.mark.parametrize("args,needle", [
    (["solve", "--stones", "13", "--out", "x"], "--stones must be an even number"),
    (["solve", "--pits", "0", "--out", "x"], "--pits must be from 1 to 5"),
    (["solve", "--min-captured", "99", "--out", "x"], "--min-captured must be from 0 to 48"),
    (["solve", "--storage-options", "{nope", "--out", "x"], "--storage-options is not valid JSON"),
    (["solve", "--storage-options", "[1]", "--out", "x"], "must be a JSON object"),
    (["solve", "--stones", "50"], "--out"),
    (["solve", "--stones", "ten", "--out", "x"], "invalid int value"),
    (["plan", "--pits", "6"], "--pits must be from 1 to 5"),
    (["frobnicate"], "invalid choice"),
])
def test_usage_errors_are_one_line_exit_2(args, needle):
    done = run_cli(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert needle in lines[0]


def test_plan_lists_pairs_sizes_and_dependencies():
    done = run_cli("plan", "--stones", "50", "--min-captured", "40")
    assert done.returncode == 0
    out = done.stdout
    assert "9 pairs, 15 layers, 575,630 positions" in out
    assert "pair-16-24" in out and "24_18 24_20 24_22 24_24" in out
    full = run_cli("plan").stdout
    assert "91 pairs, 169 layers, 125,698,242,527 positions" in full
    assert full.strip().splitlines()[-1].split()[:4] == ["0", "pair-0-0", "12,565,671,261", "12,565,671,261"]


def test_output_of_another_variant_is_refused(tmp_path):
    out = tmp_path / "tb"
    assert run_cli("solve", "--stones", "6", "--pits", "1", "--out", out, "--workers", "1").returncode == 0
    before = (out / "manifest.json").read_bytes()
    done = run_cli("solve", "--stones", "8", "--pits", "1", "--out", out, "--workers", "1")
    assert done.returncode == 1
    errors = [l for l in done.stderr.strip().splitlines() if not l.startswith("[")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr  # progress lines, one error
    assert "holds a tablebase of" in errors[0] and "choose another --out" in errors[0]
    assert (out / "manifest.json").read_bytes() == before


def test_unwritable_output_is_one_sentence(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    done = run_cli("solve", "--stones", "6", "--pits", "1", "--out", blocker / "tb", "--workers", "1")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("bestemshe-dist solve: cannot ") and "Traceback" not in done.stderr


def test_corrupt_manifest_is_refused(tmp_path):
    out = tmp_path / "tb"
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps({"hello": 1}))
    done = run_cli("solve", "--stones", "6", "--pits", "1", "--out", out, "--workers", "1")
    assert done.returncode == 1
    assert "is not a bestemshe manifest" in done.stderr
