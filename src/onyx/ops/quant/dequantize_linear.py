"""DequantizeLinear: y = (x - x_zero_point) * x_scale, per tensor, per axis or blocked."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.quant._common import FLOAT_OUTPUTS, broadcast_param, dtype_from_attr, scalar_scale
from onyx.ops.registry import op, shape_rule


def _dequantize(x, x_scale, x_zero_point, axis=1, block_size=0, output_dtype=0):
    x = np.asarray(x)
    x_scale = np.asarray(x_scale)
    if output_dtype:
        out = dtype_from_attr(output_dtype, "DequantizeLinear output_dtype")
    else:
        out = x_scale.dtype
        if out.kind != "f" and out.name not in ("bfloat16",):
            out = np.dtype(np.float32)  # float8e8m0 scales
    if out.name not in ("float32", "float16", "bfloat16"):
        raise InvalidArgument(f"DequantizeLinear: output type must be float, float16 or bfloat16, got {out}")
    if x_zero_point is not None and np.asarray(x_zero_point).dtype != x.dtype:
        raise InvalidArgument(
            f"DequantizeLinear: x_zero_point type {np.asarray(x_zero_point).dtype} "
            f"differs from x type {x.dtype}"
        )
    scale = broadcast_param(x_scale, x.shape, axis, block_size, "x_scale").astype(np.float32)
    if x.dtype.kind in "iu":
        v = x.astype(np.int64) if x.dtype.itemsize >= 4 else x.astype(np.int32)
        if x_zero_point is not None:
            zp = broadcast_param(x_zero_point, x.shape, axis, block_size, "x_zero_point")
            v = v - zp.astype(v.dtype)
        v = v.astype(np.float32)
    else:
        v = x.astype(np.float32)
        if x_zero_point is not None:
            zp = broadcast_param(x_zero_point, x.shape, axis, block_size, "x_zero_point")
            v = v - zp.astype(np.float32)
    v *= scale
    return v.astype(out, copy=False)


@op("DequantizeLinear", since=10, until=13)
def dequantize_linear_10(x, x_scale, x_zero_point=None):
    return _dequantize(x, scalar_scale(x_scale, "DequantizeLinear-10: x_scale"), x_zero_point)


@op("DequantizeLinear", since=13, until=21)
def dequantize_linear_13(x, x_scale, x_zero_point=None, *, axis=1):
    return _dequantize(x, x_scale, x_zero_point, axis)


@op("DequantizeLinear", since=21, until=23)
def dequantize_linear_21(x, x_scale, x_zero_point=None, *, axis=1, block_size=0):
    return _dequantize(x, x_scale, x_zero_point, axis, block_size)


@op("DequantizeLinear", since=23)
def dequantize_linear_23(x, x_scale, x_zero_point=None, *, axis=1, block_size=0, output_dtype=0):
    return _dequantize(x, x_scale, x_zero_point, axis, block_size, output_dtype)


@shape_rule("DequantizeLinear")
def _dequantize_linear_shape(ctx) -> None:
    """y: x's shape; float (before 19), else output_dtype (23+), else x_scale's type (float8e8m0
    scales give float)."""
    x, zp = ctx.input_elem(0), ctx.input_elem(2) if ctx.has_input(2) else None
    if x is not None and zp is not None and x != zp:
        ctx.fail(f"x_zero_point type {zp} differs from x type {x}")
    out = int(ctx.attr("output_dtype", 0) or 0) if ctx.opset >= 23 else 0
    if not out:
        scale = ctx.input_elem(1)
        if ctx.opset < 19:
            out = 1
        elif scale is not None:
            out = scale if scale in FLOAT_OUTPUTS else 1
    ctx.set_output(0, out or None, ctx.input_shape(0))
