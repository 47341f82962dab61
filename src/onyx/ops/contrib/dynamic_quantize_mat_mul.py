"""com.microsoft DynamicQuantizeMatMul: A (float) quantized to uint8 on the fly (DynamicQuantizeLinear),
multiplied exactly by the 8-bit B, rescaled by a_scale * b_scale (per column where b_scale is), plus
bias: what onnxruntime fuses DynamicQuantizeLinear + MatMulInteger + Cast + Mul into."""

from __future__ import annotations

import numpy as np

from onyx.ops.contrib._quantized import b_columns, dynamic_quantize, matmul_float_shape, to_float
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule

OP = "DynamicQuantizeMatMul"


@op("DynamicQuantizeMatMul", domain="com.microsoft", since=1)
def dynamic_quantize_mat_mul(A, B, b_scale, b_zero_point=None, bias=None, *, _ctx=None):  # noqa: N803
    _integer.check_eight_bit(B, "B", OP)
    n = b_columns(B)
    zb = _integer.zero_point(b_zero_point, B, "b_zero_point", OP, n)
    sb = _integer.scale_of(b_scale, "b_scale", OP, n)
    q, sa, za = dynamic_quantize(A, OP)
    acc = _integer.matmul(q, B, za, zb, OP, _integer.threads_of(_ctx))
    return to_float(acc, np.float32(sa) * sb, bias, OP)


@shape_rule("DynamicQuantizeMatMul", domain="com.microsoft")
def _shape(ctx) -> None:
    matmul_float_shape(ctx)
