"""com.microsoft ExpandDims: insert an axis of size 1 at ``axis`` (an int32 scalar input; -rank-1 to
rank), TensorFlow's expand_dims as tf2onnx once wrote it."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule


def _axis(axis, rank: int) -> int:
    a = np.asarray(axis)
    if a.size != 1:
        raise InvalidArgument(f"ExpandDims: axis must be a scalar, got shape {a.shape}")
    ax = int(a.reshape(-1)[0])
    if not -rank - 1 <= ax <= rank:
        raise InvalidArgument(
            f"ExpandDims: axis {ax} is out of range for rank {rank} ([{-rank - 1}, {rank}])"
        )
    return ax + rank + 1 if ax < 0 else ax


@op("ExpandDims", domain="com.microsoft", since=1)
def expand_dims(X, axis):  # noqa: N803
    x = np.asarray(X)
    return np.expand_dims(x, _axis(axis, x.ndim))


@shape_rule("ExpandDims", domain="com.microsoft")
def _shape(ctx) -> None:
    s, axis = ctx.input_shape(0), ctx.input_value(1)
    if s is None or axis is None:
        ctx.set_output(0, ctx.input_elem(0), None)
        return
    ax = _axis(axis, len(s))
    ctx.set_output(0, ctx.input_elem(0), list(s[:ax]) + [1] + list(s[ax:]))
