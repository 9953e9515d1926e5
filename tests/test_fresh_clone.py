"""A clone of the repository, in a folder with nothing beside it, has what its
tests need: no test reads outside the repository (as a user's clone has no
../shared)."""

import subprocess
import sys

from conftest import FIXTURE_M40, ROOT


def test_a_clone_with_nothing_beside_it_collects_the_suite(tmp_path):
    clone = tmp_path / "proj"
    done = subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proj"]  # no ../shared here
    fixture = clone / FIXTURE_M40.relative_to(ROOT)
    assert len(list(fixture.glob("layer_*.bin"))) == 30 and (fixture / "README.md").exists()

    collect = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert collect.returncode == 0, collect.stdout[-3000:] + collect.stderr[-3000:]
    last = collect.stdout.strip().splitlines()[-1]
    assert last.endswith("collected") or "tests collected" in last, last
    assert "error" not in last.lower() and int(last.split()[0]) > 800, last

    # The tests that read the fixture pass there.
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_format.py"],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0 and " passed" in run.stdout and "skipped" not in run.stdout, run.stdout[-3000:]
