"""com.microsoft QLinearLeakyRelu: LeakyRelu of a quantized tensor through a 256-entry lookup table."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._quantized import apply_table, check_pair, lookup_table
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule

OP = "QLinearLeakyRelu"


@op("QLinearLeakyRelu", domain="com.microsoft", since=1)
def qlinear_leaky_relu(X, X_scale, X_zero_point=None, Y_scale=None, Y_zero_point=None, *, alpha=0.01):  # noqa: N803
    check_pair(X, X_zero_point, "X", "X_zero_point", OP)
    out_dtype, _ = _integer.out_zero_point(Y_zero_point, X.dtype, OP)
    if out_dtype != X.dtype:
        raise InvalidArgument(f"{OP}: Y_zero_point is {out_dtype} but X is {X.dtype}")
    a = np.float32(alpha)
    table = lookup_table(
        X_scale, X_zero_point, Y_scale, Y_zero_point, X.dtype, lambda v: np.where(v >= 0, v, v * a), OP
    )
    return apply_table(X, table)


@shape_rule("QLinearLeakyRelu", domain="com.microsoft")
def _shape(ctx) -> None:
    ctx.set_output(0, ctx.input_elem(0), ctx.input_shape(0))
