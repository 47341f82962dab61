"""Shared by ArgMax and ArgMin: the kernel, and the registration of their two versions."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.math._common import named
from onyx.ops.reduce._shapes import arg_shape_rule
from onyx.ops.registry import register, shape_rule
from onyx.ops.tensor._common import compute_dtype, norm_axis


def arg_op(op_type: str, fn: str) -> Callable:
    """Register ``op_type`` as :func:`arg_reduce` with numpy's ``fn`` ('argmax' or 'argmin'): opsets
    1-11 take the first extreme entry, opset 12 on may take the last (``select_last_index``)."""

    def kernel_1(data, *, axis=0, keepdims=1):
        return arg_reduce(fn, data, axis, keepdims, 0)

    def kernel_12(data, *, axis=0, keepdims=1, select_last_index=0):
        return arg_reduce(fn, data, axis, keepdims, select_last_index)

    register(op_type, named(kernel_1, op_type, 1), since=1, until=12)
    register(op_type, named(kernel_12, op_type, 12), since=12)
    shape_rule(op_type)(arg_shape_rule)
    return kernel_12


def arg_reduce(fn: str, data, axis: int, keepdims: int, select_last_index: int) -> np.ndarray:
    x = np.asarray(data)
    name = "ArgMax" if fn == "argmax" else "ArgMin"
    if x.ndim == 0:
        norm_axis(axis, 1, f"{name}: axis")
        return np.array(0, dtype=np.int64)
    ax = norm_axis(axis, x.ndim, f"{name}: axis")
    n = x.shape[ax]
    if n == 0:
        raise InvalidArgument(f"{name}: axis {ax} of input shape {x.shape} is empty")
    keys = x.astype(compute_dtype(x.dtype), copy=False)
    f = np.argmax if fn == "argmax" else np.argmin
    if select_last_index:
        r = (n - 1) - f(np.flip(keys, ax), axis=ax)
    else:
        r = f(keys, axis=ax)
    r = np.asarray(r, dtype=np.int64)
    if keepdims:
        r = np.expand_dims(r, ax)
    return r
