"""ConvInteger: integer convolution with zero points, exact, into int32 (im2col + integer GEMM,
onyx.ops.quant._integer.conv)."""

from __future__ import annotations

import numpy as np

from onyx.ops.nn._conv_attrs import conv_kwargs, with_conv_attributes
from onyx.ops.nn._shapes import conv_integer_rule
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule

OP = "ConvInteger"


@op("ConvInteger", since=10)
@with_conv_attributes
def conv_integer(x, w, x_zero_point=None, w_zero_point=None, *, _ctx=None, **conv):
    _integer.check_eight_bit(x, "x", OP)
    _integer.check_eight_bit(w, "w", OP)
    xz = _integer.zero_point(x_zero_point, x, "x_zero_point", OP)
    wz = _integer.zero_point(w_zero_point, w, "w_zero_point", OP, w.shape[0] if w.ndim else None)
    return np.ascontiguousarray(_integer.conv(x, w, xz, wz, conv_kwargs(conv), OP, _integer.threads_of(_ctx)))


shape_rule("ConvInteger")(conv_integer_rule)
