"""com.microsoft MatMulIntegerToFloat: (A - a_zero_point) @ (B - b_zero_point), exact, times
a_scale * b_scale (per column where b's are), plus bias, in float32."""

from __future__ import annotations

from onyx.ops.contrib._quantized import b_columns, matmul_float_shape, to_float
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule

OP = "MatMulIntegerToFloat"


@op("MatMulIntegerToFloat", domain="com.microsoft", since=1)
def mat_mul_integer_to_float(
    A,
    B,
    a_scale,
    b_scale,
    a_zero_point=None,
    b_zero_point=None,
    bias=None,
    *,
    _ctx=None,  # noqa: N803
):
    _integer.check_eight_bit(A, "A", OP)
    _integer.check_eight_bit(B, "B", OP)
    n = b_columns(B)
    za = _integer.zero_point(a_zero_point, A, "a_zero_point", OP)
    zb = _integer.zero_point(b_zero_point, B, "b_zero_point", OP, n)
    sa = _integer.scale_of(a_scale, "a_scale", OP)
    sb = _integer.scale_of(b_scale, "b_scale", OP, n)
    acc = _integer.matmul(A, B, za, zb, OP, _integer.threads_of(_ctx))
    return to_float(acc, sa * sb, bias, OP)


@shape_rule("MatMulIntegerToFloat", domain="com.microsoft")
def _shape(ctx) -> None:
    matmul_float_shape(ctx)
