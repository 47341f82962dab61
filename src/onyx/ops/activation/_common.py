"""Helpers shared by the activation kernels."""

from __future__ import annotations

import numpy as np

from onyx.ops.math._common import F32, NATIVE_FLOATS


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) in x's (float32/float64) type, a new array; exact limits at both ends."""
    with np.errstate(over="ignore"):
        e = np.negative(x, out=...)
        np.exp(e, out=e)
    e += 1
    return np.reciprocal(e, out=e)


def float_kernel(fn):
    """Run ``fn(x, *args)`` in float32 for types numpy lacks fast loops for, then cast back."""

    def run(x, *args):
        dt = x.dtype
        if dt in NATIVE_FLOATS:
            return fn(x, *args)
        return fn(x.astype(F32), *args).astype(dt)

    return run


_INT_OF_SIZE = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def keep_where(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A new array: ``x`` where ``mask``, else zero bits (0 / +0.0). Done with bit masks, because
    numpy's ``where`` and boolean assignment are branchy and slow on unpredictable masks."""
    itype = _INT_OF_SIZE[x.dtype.itemsize]
    m = mask.view(np.int8).astype(itype)
    np.negative(m, out=m)
    m &= x.view(itype)
    return m.view(x.dtype)
