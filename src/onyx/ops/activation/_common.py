"""Helpers shared by the activation kernels."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from onyx.ops.math._common import F32, NATIVE_FLOATS, named
from onyx.ops.registry import register, shape_rule
from onyx.shape_inference import same_shape_rule


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


def float_unary_op(op_type: str, fn: Callable[[np.ndarray], np.ndarray], *, since: int) -> Callable:
    """Register ``op_type`` (no attributes) from opset ``since`` as ``fn(x)``, computed in float32 for
    the float types numpy lacks fast loops for; the output has the input's type and shape."""

    def kernel(x):
        dt = x.dtype
        if dt in NATIVE_FLOATS:
            return fn(x)
        return fn(x.astype(F32)).astype(dt)

    register(op_type, named(kernel, op_type, since), since=since)
    shape_rule(op_type)(same_shape_rule)
    return kernel


def alpha_op(op_type: str, fn: Callable[[np.ndarray, float], np.ndarray], *, alpha: float) -> Callable:
    """Register ``op_type`` as ``fn(x, alpha)`` (in float32 for the slow float types) with the
    ``alpha`` attribute defaulting to ``alpha``: opset 1, which also had ``consumed_inputs``, and
    opset 6 on (Elu, LeakyRelu)."""
    run = float_kernel(fn)
    default = alpha

    def kernel_1(x, *, alpha=default, consumed_inputs=None):
        return run(x, alpha)

    def kernel_6(x, *, alpha=default):
        return run(x, alpha)

    register(op_type, named(kernel_1, op_type, 1), since=1, until=6)
    register(op_type, named(kernel_6, op_type, 6), since=6)
    shape_rule(op_type)(same_shape_rule)
    return kernel_6


_INT_OF_SIZE = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def keep_where(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A new array: ``x`` where ``mask``, else zero bits (0 / +0.0). Done with bit masks, because
    numpy's ``where`` and boolean assignment are branchy and slow on unpredictable masks."""
    itype = _INT_OF_SIZE[x.dtype.itemsize]
    m = mask.view(np.int8).astype(itype)
    np.negative(m, out=m)
    m &= x.view(itype)
    return m.view(x.dtype)
