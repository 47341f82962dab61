"""Helpers for the compiled team tasks of the ``perf`` extra (see onyx.runtime.team).

A task is a numba ``cfunc`` of signature :data:`TASK`; its int64 parameter block holds the team size
first, then the addresses and shapes of the arrays it works on, which :func:`f32_array` turns back
into arrays.
"""

from __future__ import annotations

from numba import carray, njit, types
from numba.extending import intrinsic

#: ``void task(int32 *gtid, int32 *tid, int64 *params)``: an OpenMP microtask with one argument
TASK = types.void(types.CPointer(types.int32), types.CPointer(types.int32), types.CPointer(types.int64))


@intrinsic
def _f32_pointer(typingctx, address):  # pragma: no cover - compiled
    """The int64 ``address`` as a float32 pointer."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.float32)))

    return types.CPointer(types.float32)(types.int64), codegen


@intrinsic
def _f64_pointer(typingctx, address):  # pragma: no cover - compiled
    """The int64 ``address`` as a float64 pointer."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.float64)))

    return types.CPointer(types.float64)(types.int64), codegen


@njit(cache=True, nogil=True, inline="always")
def f32_array(address, shape):  # pragma: no cover - compiled
    """The C-contiguous float32 array of ``shape`` (a tuple) at ``address``."""
    return carray(_f32_pointer(address), shape)


@njit(cache=True, nogil=True, inline="always")
def f64_array(address, shape):  # pragma: no cover - compiled
    """The C-contiguous float64 array of ``shape`` (a tuple) at ``address``."""
    return carray(_f64_pointer(address), shape)


@njit(cache=True, nogil=True, inline="always")
def share(n, tid, threads):  # pragma: no cover - compiled
    """The part ``[lo, hi)`` of ``range(n)`` that thread ``tid`` of ``threads`` takes."""
    return n * tid // threads, n * (tid + 1) // threads
