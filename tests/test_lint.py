"""The project lints, is formatted and type-checks (ruff and mypy, as configured in
pyproject.toml), run from the repository root as a developer would."""

import subprocess
import sys

import pytest
from conftest import ROOT


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=900
    )


@pytest.mark.parametrize(
    "args",
    [
        ("ruff", "check", "."),
        ("ruff", "format", "--check", "."),
        ("mypy",),  # bare: files and strictness come from [tool.mypy]
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_the_tool_passes(args):
    done = _run(*args)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
