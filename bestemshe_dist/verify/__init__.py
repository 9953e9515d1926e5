"""Checking a tablebase position by position on Dask workers.

- proof.py    the verifier: layers found, file checks, chunk and sample tasks, the report
- kernels.py  a position's expected value from its children's stored values (numba),
              independent of the solver's propagation code

May import: game/, solve/ (the code constants), data/ and the base modules.
Never dist/ (it runs on the client it is given) or oracle/.
"""
from .proof import VerifyJob, verify

__all__ = ["VerifyJob", "verify"]
