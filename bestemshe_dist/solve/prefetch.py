"""Software prefetch for numba kernels (LLVM's llvm.prefetch).

A kernel's reads of children land at effectively random ranks of arrays of
0.1-4 GiB, far larger than the caches: one read at a time leaves the core waiting
about 100 ns for each. Asking for a word a few positions ahead, while the core
works on the current one, keeps many reads in flight (notes/: random reads cost
far less many in flight than one at a time).
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, index):
    """Start loading arr[index] into the caches; no effect on values, never faults
    (an index past the end is harmless, but callers keep it inside)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(index, types.Integer)):
        return None
    sig = types.void(arr, types.intp)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        ary, index = args
        array = context.make_array(sig.args[0])(context, builder, ary)
        ptr = cgutils.get_item_pointer(context, builder, sig.args[0], array, [index], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic(
            "llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        )
        # read (0), high temporal locality (3), data cache (1)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen
