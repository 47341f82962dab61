"""Gather: take entries along an axis at the given (possibly negative) indices."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import check_index_dtype, norm_axis
from onyx.shape_inference import ShapeContext


@op("Gather", since=1)
def gather_1(data, indices, *, axis=0):
    x = np.asarray(data)
    if x.ndim == 0:
        raise InvalidArgument("Gather: data must have rank >= 1, got a scalar")
    ax = norm_axis(axis, x.ndim)
    idx = check_index_dtype(indices)
    n = x.shape[ax]
    if idx.ndim == 0:
        i = int(idx)
        if not -n <= i < n:
            raise InvalidArgument(
                f"Gather: index {i} out of range for axis {ax} of size {n} (shape {x.shape})"
            )
        return x[(slice(None),) * ax + (i, Ellipsis)]  # a view (0-d array, never a numpy scalar)
    try:
        return np.take(x, idx, axis=ax)
    except IndexError:
        lo, hi = int(idx.min()), int(idx.max())
        raise InvalidArgument(
            f"Gather: indices in [{lo}, {hi}] out of range for axis {ax} of size {n} (shape {x.shape})"
        ) from None


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Gather")
def _gather_shape(ctx: ShapeContext) -> None:
    data, idx = ctx.input_shape(0), ctx.input_shape(1)
    if data is None or idx is None:
        ctx.set_output(0, ctx.input_elem(0), None)
        return
    if not data:
        ctx.fail("Gather: data must have rank >= 1, got a scalar")
    ax = S.norm_axis(ctx, ctx.attr("axis", 0), len(data))
    ctx.set_output(0, ctx.input_elem(0), data[:ax] + idx + data[ax + 1 :])
