"""LpPool (all versions): (sum over the window of |x|^p)^(1/p)."""

from __future__ import annotations

import numpy as np

from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._pool import pool_setup, sum_pool
from onyx.ops.nn._shapes import pool_rule
from onyx.ops.registry import op, shape_rule


def _run(X, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, p):
    kernel, strides, dilations, pb, pe, out, _ = pool_setup(
        X, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, "LpPool"
    )
    dtype = X.dtype
    x = X.astype(compute_dtype(dtype), copy=False)
    p = float(p)
    acc = sum_pool(x, kernel, strides, dilations, pb, pe, out, power=p)
    if p == 2:
        np.sqrt(acc, out=acc)
    elif p != 1:
        np.power(acc, 1.0 / p, out=acc)
    return back(acc, dtype)


@op("LpPool", since=1, until=2)
def lp_pool_1(X, *, auto_pad="NOTSET", kernel_shape=None, p=2.0, pads=None, strides=None):
    if kernel_shape is None:
        kernel_shape = X.shape[2:]
    return _run(X, kernel_shape, strides, pads, None, auto_pad, 0, p)


@op("LpPool", since=2, until=18)
def lp_pool_2(X, *, auto_pad="NOTSET", kernel_shape, p=2, pads=None, strides=None):
    return _run(X, kernel_shape, strides, pads, None, auto_pad, 0, p)


@op("LpPool", since=18)
def lp_pool_18(
    X, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape, p=2, pads=None, strides=None
):
    return _run(X, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, p)


shape_rule("LpPool")(pool_rule)
