"""Checking a tablebase position by position on Dask workers.

- driver.py   the verifier: layers found, tasks submitted, the report
- tasks.py    what workers run: file checks, chunk and sample checks, their cache
- kernels.py  a position's expected value from its children's stored values (numba),
              independent of the solver's propagation code
- records.py  a record per layer that passed, bound to its files: a rerun skips it

May import: game/, solve/ (the code constants), data/ and the base modules.
Never run/, cluster/ or watch/ (it runs on the client it is given), or oracle/.
"""

from .driver import check_options, discover_tablebase, failure_lines, new_seed, summary_line, verify
from .tasks import DEFAULT_CHUNK_SIZE, VerifyJob

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "VerifyJob",
    "check_options",
    "discover_tablebase",
    "failure_lines",
    "new_seed",
    "summary_line",
    "verify",
]
