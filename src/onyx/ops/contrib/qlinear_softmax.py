"""com.microsoft QLinearSoftmax, computed as onnxruntime's CPU kernel does so that outputs match it
exactly: a 256-entry float32 table of exp((code - 255 + shift / x_scale) * x_scale) (built in float64,
``shift`` keeping the sum of the row below FLT_MAX), indexed by 255 - (row max - x); the row's sum
accumulated in float32 in order; y = rint(e * floor(1 / y_scale) / sum) + y_zero_point, saturated.
x_zero_point cancels out. Opset < 13 flattens the axes from ``axis`` on; opset 13 reduces ``axis`` alone
(``axis`` defaults to -1 for both: the schema's default, which onnxruntime reads)."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._quantized import check_pair
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule

OP = "QLinearSoftmax"
_FLT_MAX = np.finfo(np.float32).max


def exp_table(x_scale: np.float32, reduce_len: int) -> np.ndarray:
    """Entry ``i`` (0..255): float32 exp((i - 255 + shift) * x_scale), shift = max(0, log(FLT_MAX / n) - 5)
    / x_scale: the row maximum maps to entry 255 and n such terms stay finite in float32."""
    headroom = float(np.log(np.float64(_FLT_MAX / np.float32(reduce_len))))
    shift = max(0.0, headroom - 5.0) / float(x_scale)
    with np.errstate(over="ignore"):
        return np.exp((np.arange(256, dtype=np.float64) - 255.0 + shift) * float(x_scale)).astype(np.float32)


def _softmax_rows(x: np.ndarray, table: np.ndarray, inv_scale: np.float32, zy: int) -> np.ndarray:
    """Softmax of each row of ``x`` (R, D) of 8-bit codes."""
    xi = x.astype(np.int32)
    e = table[255 - (xi.max(axis=1, keepdims=True) - xi)]
    total = np.add.accumulate(e, axis=1, dtype=np.float32)[:, -1:]  # in order, as the kernel sums
    q = np.rint((e * inv_scale) / total)  # >= 0: only the upper bound can be passed
    return np.minimum(q.astype(np.int32) + zy, np.iinfo(x.dtype).max).astype(x.dtype)


@op("QLinearSoftmax", domain="com.microsoft", since=1)
def qlinear_softmax(X, X_scale, x_zero_point=None, y_scale=None, y_zero_point=None, *, opset, axis=-1):  # noqa: N803
    check_pair(X, x_zero_point, "X", "x_zero_point", OP)
    out_dtype, zy = _integer.out_zero_point(y_zero_point, X.dtype, OP)
    if out_dtype != X.dtype:
        raise InvalidArgument(f"{OP}: y_zero_point is {out_dtype} but X is {X.dtype}")
    sx = _integer.scale_of(X_scale, "X_scale", OP)[0]
    if y_scale is None:
        raise InvalidArgument(f"{OP}: y_scale is required")
    sy = _integer.scale_of(y_scale, "y_scale", OP)[0]
    if X.ndim == 0:
        raise InvalidArgument(f"{OP}: X must have rank >= 1, got a scalar")
    ax = int(axis)  # the schema's default is -1 whatever the opset
    if not -X.ndim <= ax < X.ndim:
        raise InvalidArgument(f"{OP}: axis {ax} is out of range for X of shape {X.shape}")
    ax %= X.ndim
    if not X.size:
        return X.copy()
    inv_scale = np.float32(math.floor(np.float32(1.0) / sy))
    if opset < 13:
        d = math.prod(X.shape[ax:])
        table = exp_table(sx, d)
        return _softmax_rows(X.reshape(-1, d), table, inv_scale, zy).reshape(X.shape)
    moved = np.moveaxis(X, ax, -1)
    table = exp_table(sx, X.shape[ax])
    y = _softmax_rows(np.ascontiguousarray(moved).reshape(-1, X.shape[ax]), table, inv_scale, zy)
    return np.ascontiguousarray(np.moveaxis(y.reshape(moved.shape), -1, ax))


@shape_rule("QLinearSoftmax", domain="com.microsoft")
def _shape(ctx) -> None:
    ctx.set_output(0, ctx.input_elem(0), ctx.input_shape(0))
