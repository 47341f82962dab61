"""AveragePool (all versions): mean over windows, with or without the padding in the count."""

from __future__ import annotations

from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._pool import avg_pool, pool_setup
from onyx.ops.nn._shapes import pool_rule
from onyx.ops.registry import op, shape_rule


def _run(X, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, count_include_pad):
    kernel, strides, dilations, pb, pe, out, pe0 = pool_setup(
        X, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, "AveragePool"
    )
    dtype = X.dtype
    x = X.astype(compute_dtype(dtype), copy=False)
    return back(avg_pool(x, kernel, strides, dilations, pb, pe, out, pe0, count_include_pad), dtype)


@op("AveragePool", since=1, until=7)
def average_pool_1(X, *, auto_pad="NOTSET", kernel_shape, pads=None, strides=None):
    return _run(X, kernel_shape, strides, pads, None, auto_pad, 0, 0)


@op("AveragePool", since=7, until=10)
def average_pool_7(X, *, auto_pad="NOTSET", count_include_pad=0, kernel_shape, pads=None, strides=None):
    return _run(X, kernel_shape, strides, pads, None, auto_pad, 0, count_include_pad)


@op("AveragePool", since=10, until=19)
def average_pool_10(
    X, *, auto_pad="NOTSET", ceil_mode=0, count_include_pad=0, kernel_shape, pads=None, strides=None
):
    return _run(X, kernel_shape, strides, pads, None, auto_pad, ceil_mode, count_include_pad)


@op("AveragePool", since=19)
def average_pool_19(
    X,
    *,
    auto_pad="NOTSET",
    ceil_mode=0,
    count_include_pad=0,
    dilations=None,
    kernel_shape,
    pads=None,
    strides=None,
):
    return _run(X, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, count_include_pad)


shape_rule("AveragePool")(pool_rule)
