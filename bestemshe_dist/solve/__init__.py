"""Solving a pair in memory: 2-bit codes, the numba kernels over rank ranges, and
a pair's state and rounds (a round's decisions are a Delta).

- code_arrays.py  2-bit codes packed in uint64 words: read, write, count, merge,
                  a round's decisions, win/draw bitset conversions (numba)
- kernels.py      sweeps and frontier rounds over rank ranges of a pair (numba)
- atomics.py      claiming a 2-bit code from several threads
- prefetch.py     a software prefetch numba can call
- bits.py         bit scans: a code word's decided positions, lowest first (numba)
- pair.py         PairState, Delta, the round methods, a whole pair in one process
- counting.py     counting retrograde: 3-bit states (21 a word), the first pass,
                  un-move walks, a whole pair in one process by counting

May import: game/ and the base modules. Never data/ (no bytes, no I/O) or run/
(no Dask): kernels see arrays and integers only.
"""
