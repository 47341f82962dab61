"""com.microsoft QLinearWhere: Where over quantized X and Y, each first requantized to Z's scale and zero
point through a 256-entry table (dequantized, divided by z_scale, rounded half to even, saturated), as
onnxruntime computes it; condition, X and Y broadcast."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._quantized import apply_table, check_pair, lookup_table
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import broadcast_dims

OP = "QLinearWhere"


def _same(v: np.ndarray) -> np.ndarray:
    return v


@op("QLinearWhere", domain="com.microsoft", since=1)
def qlinear_where(condition, X, x_scale, x_zero_point, Y, y_scale, y_zero_point, z_scale, z_zero_point):  # noqa: N803
    if condition.dtype != np.bool_:
        raise InvalidArgument(f"{OP}: condition must be bool, got {condition.dtype}")
    check_pair(X, x_zero_point, "X", "x_zero_point", OP)
    check_pair(Y, y_zero_point, "Y", "y_zero_point", OP)
    check_pair(X, z_zero_point, "X", "z_zero_point", OP)
    if Y.dtype != X.dtype:
        raise InvalidArgument(f"{OP}: Y is {Y.dtype} but X is {X.dtype}")
    try:
        np.broadcast_shapes(condition.shape, X.shape, Y.shape)
    except ValueError:
        raise InvalidArgument(
            f"{OP}: condition {condition.shape}, X {X.shape} and Y {Y.shape} do not broadcast"
        ) from None
    xt = lookup_table(x_scale, x_zero_point, z_scale, z_zero_point, X.dtype, _same, OP)
    yt = lookup_table(y_scale, y_zero_point, z_scale, z_zero_point, X.dtype, _same, OP)
    return np.where(condition, apply_table(X, xt), apply_table(Y, yt))


@shape_rule("QLinearWhere", domain="com.microsoft")
def _shape(ctx) -> None:
    shapes = [ctx.input_shape(i) for i in (0, 1, 4)]
    ctx.set_output(0, ctx.input_elem(1), broadcast_dims(shapes))
