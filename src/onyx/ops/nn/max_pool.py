"""MaxPool (all versions): max over windows, optional Indices output (flat, row- or column-major)."""

from __future__ import annotations

from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._pool import max_pool, max_pool_with_indices, pool_setup
from onyx.ops.nn._shapes import pool_rule
from onyx.ops.registry import op, shape_rule


def _run(
    X, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, storage_order, want_indices, ctx=None
):  # noqa: N803, E501
    kernel, strides, dilations, pb, pe, out, _ = pool_setup(
        X, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, "MaxPool"
    )
    dtype = X.dtype
    x = X.astype(compute_dtype(dtype), copy=False) if dtype.kind not in "iub" else X
    if want_indices:
        y, idx = max_pool_with_indices(
            x, kernel, strides, dilations, pb, pe, out, storage_order, getattr(ctx, "stop", None)
        )
        return back(y, dtype), idx
    threads = int(getattr(ctx, "intra_op_num_threads", 0) or 0) if ctx is not None else 0
    return back(max_pool(x, kernel, strides, dilations, pb, pe, out, threads), dtype)


@op("MaxPool", since=1, until=8)
def max_pool_1(X, *, auto_pad="NOTSET", kernel_shape, pads=None, strides=None, _ctx=None):
    return _run(X, kernel_shape, strides, pads, None, auto_pad, 0, 0, False, _ctx)


@op("MaxPool", since=8, until=10)
def max_pool_8(
    X, *, auto_pad="NOTSET", kernel_shape, pads=None, storage_order=0, strides=None, _num_outputs=1, _ctx=None
):
    return _run(X, kernel_shape, strides, pads, None, auto_pad, 0, storage_order, _num_outputs > 1, _ctx)


@op("MaxPool", since=10)
def max_pool_10(
    X,
    *,
    auto_pad="NOTSET",
    ceil_mode=0,
    dilations=None,
    kernel_shape,
    pads=None,
    storage_order=0,
    strides=None,
    _num_outputs=1,
    _ctx=None,
):
    return _run(
        X, kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, storage_order, _num_outputs > 1, _ctx
    )


shape_rule("MaxPool")(pool_rule)
