"""What the tests of interrupted solves share: a small chunked solve run as a user
runs it (the CLI in its own process group, so that a test can kill it whole),
the uninterrupted solve it must end equal to, and the comparison."""

import subprocess
import sys

from conftest import ROOT

from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.tasks import Job

STONES, PITS, CHUNK = 12, 3, 150
ARGS = ["solve", "--stones", STONES, "--pits", PITS, "--chunk-size", CHUNK, "--workers", 2]


def solve_reference(client, out):
    """The same solve, uninterrupted, in this process."""
    variant = Variant(STONES, PITS)
    solve(client, Job(str(out), variant), make_plan(variant), chunk_size=CHUNK)
    return out


def start(out):
    """The solve of ARGS into `out` as its own process group, its lines on stderr."""
    return subprocess.Popen(
        [sys.executable, "-m", "bestemshe_dist", *map(str, ARGS), "--out", str(out)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def same_files(out, reference):
    names = sorted(p.name for p in reference.glob("layer_*.bin"))
    assert sorted(p.name for p in out.glob("layer_*.bin")) == names
    for name in names:
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name
