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

# Debian packages the tests drive (they start and stop their own servers and fail
# if a package is missing): nginx serves a tablebase over HTTP to the oracle
# tests; chromium loads the solve's dashboard page (through Playwright from PyPI,
# never a downloaded browser); SLURM and munge run the --cluster slurm test on a
# real single-node SLURM (scripts/slurm-single-node.sh starts and stops it);
# iproute2 and util-linux make the separate hosts of tests/hosts_support.py.
missing=()
if ! command -v ip >/dev/null 2>&1; then missing+=(iproute2); fi
if ! command -v unshare >/dev/null 2>&1; then missing+=(util-linux); fi
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then missing+=(nginx-light); fi
if [ ! -x /usr/bin/chromium ]; then missing+=(chromium); fi
for tool in slurmctld slurmd sbatch munged; do
    if ! command -v "$tool" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$tool" ]; then
        missing+=(slurmctld slurmd slurm-client munge)
        break
    fi
done
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Two workers (pytest-xdist), a file to a worker: one at a time, the suite keeps
# about one of two cores busy (it waits on servers, subprocesses and timeouts),
# so two at once take about half the wall time. tests/conftest.py keeps the files
# that share a machine-wide server on one worker. `-n 0` after it: one at a time.
exec .venv/bin/python -m pytest -n 2 --dist loadfile "$@"
