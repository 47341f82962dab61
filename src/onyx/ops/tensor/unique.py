"""Unique: the unique values (or slices along ``axis``), their first-occurrence indices, the inverse
mapping and the counts; sorted ascending, or in order of first occurrence when ``sorted=0``."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import is_ml_dtype, norm_axis
from onyx.shape_inference import ShapeContext


def _object_unique_axis(x: np.ndarray, ax: int):
    """np.unique(axis=...) cannot sort object slices: do it with Python tuples."""
    slices = [tuple(np.take(x, i, axis=ax).reshape(-1).tolist()) for i in range(x.shape[ax])]
    order = sorted(range(len(slices)), key=lambda i: slices[i])
    first: list[int] = []
    inverse = np.empty(len(slices), dtype=np.int64)
    counts: list[int] = []
    prev = None
    for i in order:
        if prev is None or slices[i] != slices[prev]:
            first.append(i)
            counts.append(0)
        inverse[i] = len(first) - 1
        counts[-1] += 1
        prev = i
    return np.array(first, dtype=np.int64), inverse, np.array(counts, dtype=np.int64)


@op("Unique", since=11)
def unique_11(X, *, axis=None, sorted=1):  # noqa: A002 - the attribute's name
    x = np.asarray(X)
    if axis is None:
        src = x.reshape(-1)
        ax = 0
    else:
        src = x
        ax = norm_axis(axis, x.ndim)
    keys = src.astype(np.float32) if is_ml_dtype(src.dtype) else src
    if keys.dtype == object and axis is not None:
        first, inverse, counts = _object_unique_axis(keys, ax)
    else:
        _, first, inverse, counts = np.unique(
            keys,
            return_index=True,
            return_inverse=True,
            return_counts=True,
            axis=None if axis is None else ax,
        )
    first = first.astype(np.int64, copy=False)
    inverse = inverse.reshape(-1).astype(np.int64, copy=False)
    counts = counts.astype(np.int64, copy=False)
    if not sorted:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    y = np.take(src, first, axis=ax)
    return y, first, inverse, counts


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Unique")
def _unique_shape(ctx: ShapeContext) -> None:
    elem = ctx.input_elem(0)
    src = ctx.input_shape(0)
    u = ctx.new_dim()  # the number of unique values (or slices) depends on the data
    axis = ctx.attr("axis", None)
    if axis is None:
        ctx.set_output(0, elem, [u])
        inverse = [S.prod(src)]
    elif src is None:
        ctx.set_output(0, elem, None)
        inverse = [None]
    else:
        ax = S.norm_axis(ctx, axis, len(src), "Unique: axis")
        ctx.set_output(0, elem, src[:ax] + [u] + src[ax + 1 :])
        inverse = [src[ax]]
    ctx.set_output(1, S.INT64, [u])
    ctx.set_output(2, S.INT64, inverse)
    ctx.set_output(3, S.INT64, [u])
