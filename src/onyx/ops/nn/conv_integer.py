"""ConvInteger: integer convolution with zero points, accumulated exactly (float64 GEMM) into int32."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._conv_attrs import conv_kwargs, with_conv_attributes
from onyx.ops.nn._shapes import conv_integer_rule
from onyx.ops.nn.conv import conv_forward
from onyx.ops.registry import op, shape_rule


def centered(x, zp, axis_len=None, what="x"):
    """``x - zero_point`` in float64 (exact for 8-bit data); per-channel zero points on axis 0."""
    xf = x.astype(np.float64)
    if zp is None:
        return xf
    z = np.asarray(zp).astype(np.float64)
    if z.size == 1:
        if z.reshape(()) != 0:
            xf -= z.reshape(())
        return xf
    if z.ndim != 1 or (axis_len is not None and z.shape[0] != axis_len):
        raise InvalidArgument(f"{what} zero point of shape {z.shape} does not fit tensor of shape {x.shape}")
    return xf - z.reshape((-1,) + (1,) * (x.ndim - 1))


@op("ConvInteger", since=10)
@with_conv_attributes
def conv_integer(
    x,
    w,
    x_zero_point=None,
    w_zero_point=None,
    **conv,
):
    if x_zero_point is not None and np.asarray(x_zero_point).size != 1:
        raise InvalidArgument(
            f"ConvInteger: x_zero_point must be a scalar, got shape {np.shape(x_zero_point)}"
        )
    xf = centered(x, x_zero_point, what="x")
    wf = centered(w, w_zero_point, w.shape[0], what="w")
    return conv_forward(xf, wf, None, **conv_kwargs(conv)).astype(np.int32)


shape_rule("ConvInteger")(conv_integer_rule)
