#!/usr/bin/env bash
# The project's test command (README): installs everything the tests need into
# ./.venv on a fresh machine, then runs the whole suite. Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'

exec .venv/bin/python -m pytest "$@"
