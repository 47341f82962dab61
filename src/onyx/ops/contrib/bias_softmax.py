"""com.microsoft BiasSoftmax: softmax(data + bias) over the axes from ``axis`` on (bias broadcast)."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._common import back, rule_like_input0, to_compute
from onyx.ops.registry import op, shape_rule


@op("BiasSoftmax", domain="com.microsoft", since=1)
def bias_softmax(data, bias, *, axis=1, is_inner_broadcast):
    x = to_compute(data)
    b = to_compute(bias)
    if b.ndim < x.ndim and is_inner_broadcast:
        b = b.reshape(b.shape + (1,) * (x.ndim - b.ndim))
    try:
        s = np.add(x, b)
    except ValueError:
        raise InvalidArgument(
            f"BiasSoftmax: bias {bias.shape} does not broadcast to data {data.shape}"
        ) from None
    ax = axis + x.ndim if axis < 0 else axis
    if not 0 <= ax < max(x.ndim, 1):
        raise InvalidArgument(f"BiasSoftmax: axis {axis} out of range for rank {x.ndim}")
    shape = s.shape
    s = s.reshape(int(np.prod(shape[:ax])), -1) if s.size else s
    if s.size:
        s -= np.max(s, axis=1, keepdims=True)
        np.exp(s, out=s)
        s /= np.sum(s, axis=1, keepdims=True)
    return back(s.reshape(shape), data.dtype)


@shape_rule("BiasSoftmax", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx)
