"""com.microsoft QLinearMul: Mul of two quantized tensors, requantized to C's scale and zero point."""

from __future__ import annotations

from onyx.ops.contrib import _qlinear_binary
from onyx.ops.registry import op, shape_rule


@op("QLinearMul", domain="com.microsoft", since=1)
def qlinear_mul(A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point=None):  # noqa: N803
    return _qlinear_binary.qlinear_binary(
        "QLinearMul", A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point
    )


shape_rule("QLinearMul", domain="com.microsoft")(_qlinear_binary.shape)
