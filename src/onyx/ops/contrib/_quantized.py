"""Helpers of the com.microsoft quantized kernels: dynamic quantization of a float input, an integer
product rescaled to float, 8-bit lookup tables, and the shape rules they share."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import int8 as k8
from onyx.ops.quant import _integer
from onyx.ops.quant._common import matmul_dims
from onyx.ops.quant.dynamic_quantize_linear import dynamic_quantize_linear_11


def dynamic_quantize(a: np.ndarray, op: str) -> tuple[np.ndarray, np.float32, int]:
    """``a`` (float) as uint8 with the scale and zero point of DynamicQuantizeLinear (as onnxruntime's
    DynamicQuantizeMatMul computes them)."""
    if a.dtype.kind != "f":
        raise InvalidArgument(f"{op}: A must be a float tensor, got {a.dtype}")
    if not a.size:
        q, scale, zp = dynamic_quantize_linear_11(a)
        return q, np.float32(scale), int(zp)
    return k8.dynamic_quantize(a.astype(np.float32, copy=False))


def to_float(acc: np.ndarray, scale: np.ndarray, bias, op: str) -> np.ndarray:
    """float32 ``acc * scale + bias``: ``scale`` one value or one per column (last axis)."""
    n = acc.shape[-1] if acc.ndim else 1
    y = acc.astype(np.float32)
    y *= scale if scale.size == 1 else scale.reshape(-1)
    if bias is not None:
        b = np.asarray(bias)
        if b.dtype != np.float32 or b.shape != (n,):
            raise InvalidArgument(f"{op}: bias must be float32 of shape ({n},), got {b.dtype} {b.shape}")
        y += b
    return y


def b_columns(b: np.ndarray) -> int | None:
    return b.shape[-1] if b.ndim >= 2 else None


def lookup_table(x_scale, x_zero_point, y_scale, y_zero_point, dtype, fn, op: str) -> np.ndarray:
    """The 256 outputs of an elementwise quantized op: every 8-bit input dequantized, ``fn`` applied
    in float32, quantized (half to even, saturated)."""
    dtype = np.dtype(dtype)
    sx = _integer.scale_of(x_scale, "X_scale", op)[0]
    sy = _integer.scale_of(y_scale, "Y_scale", op)[0]
    zx = 0 if x_zero_point is None else int(np.asarray(x_zero_point).reshape(-1)[0])
    zy = 0 if y_zero_point is None else int(np.asarray(y_zero_point).reshape(-1)[0])
    info = np.iinfo(dtype)
    codes = np.arange(info.min, info.max + 1, dtype=np.int32)
    v = fn((codes - zx).astype(np.float32) * sx)
    q = np.rint(v / sy) + np.float32(zy)
    np.clip(q, info.min, info.max, out=q)
    table = np.empty(256, dtype)
    table[codes.astype(dtype).view(np.uint8)] = q.astype(dtype)
    return table


def apply_table(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    return table[x.view(np.uint8)]


def check_pair(x, z, what: str, zwhat: str, op: str) -> None:
    _integer.check_eight_bit(x, what, op)
    if z is not None and np.asarray(z).dtype != x.dtype:
        raise InvalidArgument(f"{op}: {zwhat} is {np.asarray(z).dtype} but {what} is {x.dtype}")
    if z is not None and np.asarray(z).size != 1:
        raise InvalidArgument(f"{op}: {zwhat} must hold one value, got shape {np.asarray(z).shape}")


def matmul_float_shape(ctx, a: int = 0, b: int = 1) -> None:
    """float32 output of numpy.matmul's shape of inputs ``a`` and ``b``."""
    ctx.set_output(0, 1, matmul_dims(ctx.input_shape(a), ctx.input_shape(b), ctx.fail))
