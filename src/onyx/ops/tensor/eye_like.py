"""EyeLike: a 2-D tensor with ones on the k-th diagonal, shaped like the input."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import to_numpy
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.shape_inference import ShapeContext


@op("EyeLike", since=9)
def eye_like_9(input, *, dtype=None, k=0):
    x = np.asarray(input)
    if x.ndim != 2:
        raise InvalidArgument(f"EyeLike: input must be 2-D, got shape {x.shape}")
    dt = x.dtype if dtype is None else to_numpy(int(dtype))
    out = np.zeros(x.shape, dtype=dt)
    n, m = x.shape
    k = int(k)
    if -n < k < m:
        i = np.arange(max(0, -k), min(n, m - k))
        out[i, i + k] = 1
    return out


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("EyeLike")
def _eye_like_shape(ctx: ShapeContext) -> None:
    s = ctx.input_shape(0)
    if s is not None and len(s) != 2:
        ctx.fail(f"EyeLike: input must be 2-D, got shape {s}")
    dtype = ctx.attr("dtype", None)
    ctx.set_output(0, ctx.input_elem(0) if dtype is None else S.elem_code(dtype), s)
