"""Atomic operations on uint64 words for numba kernels (LLVM atomicrmw / cmpxchg).

A frontier round writes its decisions into one round array per layer that every
task on a host shares (threads of a worker, and worker processes through a
memory-mapped file: hostmem.py). Two tasks may decide positions in the same
64-bit word at once, so a plain read-modify-write could lose one of them; these
make each update of a word indivisible. On x86-64 they are `lock`-prefixed
instructions, which also order correctly between processes mapping the same
pages. Measured here: about 20 ns per uncontended compare-and-swap, paid once
per decision, against roughly 100 ns of un-moves and ranks per source.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


def _word_pointer(context: Any, builder: Any, arrty: Any, ary: Any, index: Any) -> Any:
    """A pointer to ary[index] in the generated code (numba's code-generation objects are untyped)."""
    array = context.make_array(arrty)(context, builder, ary)
    return cgutils.get_item_pointer(context, builder, arrty, array, [index], wraparound=False)


@intrinsic
def atomic_or(typingctx, arr, index, value):
    """arr[index] |= value, indivisibly; returns the word before."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint64 and arr.ndim == 1):
        return None
    sig = types.uint64(arr, types.intp, types.uint64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        ary, index, value = args
        ptr = _word_pointer(context, builder, sig.args[0], ary, index)
        return builder.atomic_rmw("or", ptr, value, "seq_cst")

    return sig, codegen


@intrinsic
def compare_and_swap(typingctx, arr, index, expected, new):
    """If arr[index] == expected, store new; returns the word found (== expected
    when the store happened)."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint64 and arr.ndim == 1):
        return None
    sig = types.uint64(arr, types.intp, types.uint64, types.uint64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        ary, index, expected, new = args
        ptr = _word_pointer(context, builder, sig.args[0], ary, index)
        result = builder.cmpxchg(ptr, expected, new, "seq_cst", "seq_cst")
        return builder.extract_value(result, 0)

    return sig, codegen


@njit(cache=True, nogil=True, inline="always")
def claim_code(codes, index, code, over_checked):
    """Set position `index` to `code` if it holds UNKNOWN (0), or CHECKED (3) when
    `over_checked`; returns True if this call made the change. Any other code
    already there (another task's decision) is left alone."""
    w = index >> 5
    shift = np.uint64((index & 31) << 1)
    mask = np.uint64(3) << shift
    value = np.uint64(code) << shift
    while True:
        old = codes[w]
        found = (old >> shift) & np.uint64(3)
        if found != np.uint64(0) and not (over_checked and found == np.uint64(3)):
            return False
        if compare_and_swap(codes, w, old, (old & ~mask) | value) == old:
            return True
