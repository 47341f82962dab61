"""Compress: select slices along an axis (or of the flattened tensor) where ``condition`` is true."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import norm_axis
from onyx.shape_inference import ShapeContext


@op("Compress", since=9)
def compress_9(input, condition, *, axis=None):
    cond = np.asarray(condition)
    if cond.ndim != 1:
        raise InvalidArgument(f"Compress: condition must be 1-D, got shape {cond.shape}")
    if cond.dtype != np.bool_:
        cond = cond != 0
    x = np.asarray(input)
    if axis is None:
        x = x.reshape(-1)
        ax = 0
    else:
        ax = norm_axis(axis, x.ndim)
    n = x.shape[ax]
    if cond.shape[0] > n:
        if cond[n:].any():
            raise InvalidArgument(
                f"Compress: condition of length {cond.shape[0]} selects beyond axis {ax} of size {n} "
                f"(input shape {x.shape})"
            )
        cond = cond[:n]
    (sel,) = np.nonzero(cond)
    return np.take(x, sel, axis=ax)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Compress")
def _compress_shape(ctx: ShapeContext) -> None:
    elem = ctx.input_elem(0)
    src = ctx.input_shape(0)
    cond = ctx.input_value(1)
    count = None
    if cond is not None and np.asarray(cond).dtype != object:
        count = int(np.count_nonzero(np.asarray(cond)))
    axis = ctx.attr("axis", None)
    if axis is None:
        ctx.set_output(0, elem, [count if count is not None else ctx.new_dim()])
        return
    if src is None:
        ctx.set_output(0, elem, None)
        return
    ax = S.norm_axis(ctx, axis, len(src), "Compress: axis")
    ctx.set_output(0, elem, src[:ax] + [count if count is not None else ctx.new_dim()] + src[ax + 1 :])
