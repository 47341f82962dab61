"""QuantizeLinear: y = saturate(round(x / y_scale) + y_zero_point), per tensor, per axis or blocked."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import int8 as k8
from onyx.ops.quant._common import broadcast_param, dtype_from_attr, saturate_cast, scalar_scale
from onyx.ops.registry import op, shape_rule

_LOW_FLOATS = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
_EIGHT_BIT = (np.dtype(np.uint8), np.dtype(np.int8))


def _quantize(x, y_scale, y_zero_point, axis=1, block_size=0, output_dtype=0, saturate=1, precision=0):
    x = np.asarray(x)
    y_scale = np.asarray(y_scale)
    if output_dtype:
        out = dtype_from_attr(output_dtype, "QuantizeLinear output_dtype")
        if y_zero_point is not None and np.asarray(y_zero_point).dtype != out:
            raise InvalidArgument(
                f"QuantizeLinear: output_dtype {out} differs from "
                f"y_zero_point type {np.asarray(y_zero_point).dtype}"
            )
    elif y_zero_point is not None:
        out = np.asarray(y_zero_point).dtype
    else:
        out = np.dtype(np.uint8)
    if precision:
        prec = dtype_from_attr(precision, "QuantizeLinear precision")
    else:
        prec = y_scale.dtype
    if prec not in _LOW_FLOATS and prec != np.float64:
        prec = np.dtype(np.float32)
    if (
        y_scale.size == 1
        and not block_size
        and y_scale.dtype == np.float32
        and prec == np.float32
        and out in _EIGHT_BIT
        and (y_zero_point is None or np.asarray(y_zero_point).size == 1)
    ):
        zp = 0 if y_zero_point is None else int(np.asarray(y_zero_point).reshape(-1)[0])
        q = k8.quantize(x, float(y_scale.reshape(-1)[0]), zp, out)
        if q is not None:  # one scale, float32: the compiled loop (the same float32 arithmetic)
            return q
    scale = broadcast_param(y_scale, x.shape, axis, block_size, "y_scale")
    # the division runs in the precision type (numpy evaluates bfloat16 through float32 and rounds)
    q = np.divide(x.astype(prec, copy=False), scale.astype(prec, copy=False))
    q = q.astype(np.float32, copy=False) if prec != np.float64 else q
    if out.kind in "iu" or out.name.startswith(("int", "uint")):
        q = np.rint(q)
        if y_zero_point is not None:
            zp = broadcast_param(y_zero_point, x.shape, axis, block_size, "y_zero_point")
            q = q + zp.astype(np.float32)
        return saturate_cast(q, out, saturate)
    if y_zero_point is not None:
        zp = broadcast_param(y_zero_point, x.shape, axis, block_size, "y_zero_point")
        q = q + zp.astype(np.float32)
    return saturate_cast(q, out, saturate)


@op("QuantizeLinear", since=10, until=13)
def quantize_linear_10(x, y_scale, y_zero_point=None):
    return _quantize(x, scalar_scale(y_scale, "QuantizeLinear-10: y_scale"), y_zero_point)


@op("QuantizeLinear", since=13, until=19)
def quantize_linear_13(x, y_scale, y_zero_point=None, *, axis=1):
    return _quantize(x, y_scale, y_zero_point, axis)


@op("QuantizeLinear", since=19, until=21)
def quantize_linear_19(x, y_scale, y_zero_point=None, *, axis=1, saturate=1):
    return _quantize(x, y_scale, y_zero_point, axis, saturate=saturate)


@op("QuantizeLinear", since=21, until=23)
def quantize_linear_21(x, y_scale, y_zero_point=None, *, axis=1, block_size=0, output_dtype=0, saturate=1):
    return _quantize(x, y_scale, y_zero_point, axis, block_size, output_dtype, saturate)


@op("QuantizeLinear", since=23)
def quantize_linear_23(
    x, y_scale, y_zero_point=None, *, axis=1, block_size=0, output_dtype=0, precision=0, saturate=1
):
    return _quantize(x, y_scale, y_zero_point, axis, block_size, output_dtype, saturate, precision)


@shape_rule("QuantizeLinear")
def _quantize_linear_shape(ctx) -> None:
    """y: x's shape; element type output_dtype (21+), else y_zero_point's type, else uint8."""
    out = int(ctx.attr("output_dtype", 0) or 0) if ctx.opset >= 21 else 0
    zp = ctx.input_elem(2) if ctx.has_input(2) else None
    if out and zp is not None and zp != out:
        ctx.fail(f"output_dtype {out} differs from the y_zero_point type {zp}")
    elem = out or (zp if ctx.has_input(2) else 2)
    ctx.set_output(0, elem, ctx.input_shape(0))
