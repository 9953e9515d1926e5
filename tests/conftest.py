import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BESTEMSHE_SHARED", ROOT.parent / "shared"))
FIXTURE_M40 = SHARED / "fixtures" / "published-m40"


def run_cli(*args, timeout=600):
    """Run `bestemshe-dist ARGS` as a user would; returns CompletedProcess (text)."""
    return subprocess.run(
        [sys.executable, "-m", "bestemshe_dist", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT,
    )


@pytest.fixture(scope="session")
def client():
    """A Dask cluster inside the test process: two single-threaded workers."""
    from distributed import Client, LocalCluster
    import logging

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster:
        with Client(cluster) as c:
            yield c
