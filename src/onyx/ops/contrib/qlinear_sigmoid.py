"""com.microsoft QLinearSigmoid: sigmoid of a quantized tensor through a 256-entry lookup table (every
input code dequantized, sigmoid in float32, quantized to Y's scale and zero point)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._quantized import apply_table, check_pair, lookup_table
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule

OP = "QLinearSigmoid"


def _sigmoid(v: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-v))).astype(np.float32)


@op("QLinearSigmoid", domain="com.microsoft", since=1)
def qlinear_sigmoid(X, X_scale, X_zero_point=None, Y_scale=None, Y_zero_point=None):  # noqa: N803
    check_pair(X, X_zero_point, "X", "X_zero_point", OP)
    out_dtype, _ = _integer.out_zero_point(Y_zero_point, X.dtype, OP)
    if out_dtype != X.dtype:
        raise InvalidArgument(f"{OP}: Y_zero_point is {out_dtype} but X is {X.dtype}")
    table = lookup_table(X_scale, X_zero_point, Y_scale, Y_zero_point, X.dtype, _sigmoid, OP)
    return apply_table(X, table)


@shape_rule("QLinearSigmoid", domain="com.microsoft")
def _shape(ctx) -> None:
    ctx.set_output(0, ctx.input_elem(0), ctx.input_shape(0))
