"""Shape: the input's shape as int64; opset 15 adds ``start``/``end`` (clamped like Python slices)."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.shape_inference import ShapeContext


@op("Shape", since=1, until=15)
def shape_1(data):
    return np.array(np.shape(data), dtype=np.int64)


@op("Shape", since=15)
def shape_15(data, *, end=None, start=0):
    s = np.shape(data)
    return np.array(s[int(start) : (None if end is None else int(end))], dtype=np.int64)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Shape")
def _shape_shape(ctx: ShapeContext) -> None:
    dims = ctx.input_shape(0)
    if dims is None:
        ctx.set_output(0, S.INT64, [None])
        return
    r = len(dims)
    start = int(ctx.attr("start", 0))
    end = ctx.attr("end", None)
    s = max(0, min(r, start + r if start < 0 else start))
    e = r if end is None else max(0, min(r, int(end) + r if int(end) < 0 else int(end)))
    picked = dims[s:e]
    if all(d is not None for d in picked):
        # the driver evaluates Shape itself unless the input's value is symbolic: give the value here
        ctx.set_output_value(0, S.dims_array(picked), S.INT64)
    else:
        ctx.set_output(0, S.INT64, [len(picked)])
