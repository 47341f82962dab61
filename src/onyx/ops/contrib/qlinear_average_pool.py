"""com.microsoft QLinearAveragePool, computed as onnxruntime's CPU kernel does: X dequantized to float32,
each window summed in float32 in row-major order (padding adds nothing), divided by the window's count
(the whole kernel with count_include_pad, else the positions inside X), y = rint(mean / y_scale +
y_zero_point) saturated. channels_last: X is (N, *spatial, C)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._quantized import check_pair
from onyx.ops.nn._pool import pool_setup
from onyx.ops.nn._shapes import pool_rule, window_out
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule

OP = "QLinearAveragePool"


def _counts(in_shape, kernel, strides, pb, out) -> np.ndarray:
    """Positions of each window inside X (the product over axes of the clipped window lengths)."""
    total = np.ones((), np.float32)
    for n, k, s, b, o in zip(in_shape, kernel, strides, pb, out, strict=True):
        start = np.arange(o) * s - b
        length = np.minimum(start + k, n) - np.maximum(start, 0)
        total = np.multiply.outer(total, length.astype(np.float32))
    return total


def _pool(xf: np.ndarray, kernel, strides, pb, pe, out) -> np.ndarray:
    """float32 window sums of ``xf`` (N, C, *spatial), one kernel offset after another."""
    padded = np.pad(xf, [(0, 0), (0, 0)] + [(b, e) for b, e in zip(pb, pe, strict=True)])
    acc = np.zeros(xf.shape[:2] + tuple(out), np.float32)
    for offs in itertools.product(*(range(k) for k in kernel)):
        idx = tuple(slice(o, o + (n - 1) * s + 1, s) for o, n, s in zip(offs, out, strides, strict=True))
        acc += padded[(slice(None), slice(None)) + idx]
    return acc


@op("QLinearAveragePool", domain="com.microsoft", since=1)
def qlinear_average_pool(
    X,  # noqa: N803
    x_scale,
    x_zero_point=None,
    y_scale=None,
    y_zero_point=None,
    *,
    kernel_shape,
    auto_pad="NOTSET",
    ceil_mode=0,
    channels_last=0,
    count_include_pad=0,
    pads=None,
    strides=None,
):
    check_pair(X, x_zero_point, "X", "x_zero_point", OP)
    if X.ndim < 3:
        raise InvalidArgument(f"{OP}: X must have rank >= 3, got shape {X.shape}")
    out_dtype, zy = _integer.out_zero_point(y_zero_point, X.dtype, OP)
    if out_dtype != X.dtype:
        raise InvalidArgument(f"{OP}: y_zero_point is {out_dtype} but X is {X.dtype}")
    if y_scale is None:
        raise InvalidArgument(f"{OP}: y_scale is required")
    sx = _integer.scale_of(x_scale, "x_scale", OP)[0]
    sy = _integer.scale_of(y_scale, "y_scale", OP)[0]
    zx = 0 if x_zero_point is None else int(np.asarray(x_zero_point).reshape(-1)[0])
    x = np.moveaxis(X, -1, 1) if channels_last else X
    kernel, strides_, _, pb, pe, out, _ = pool_setup(
        x, kernel_shape, strides, pads, None, auto_pad, ceil_mode, f"{OP}"
    )
    xf = (x.astype(np.int32) - zx).astype(np.float32) * sx
    sums = _pool(xf, kernel, strides_, pb, pe, out)
    if count_include_pad:
        mean = sums / np.float32(math.prod(kernel))
    else:
        mean = sums / _counts(x.shape[2:], kernel, strides_, pb, out)
    info = np.iinfo(out_dtype)
    y = np.clip(np.rint(mean / sy + np.float32(zy)), info.min, info.max).astype(out_dtype)
    return np.ascontiguousarray(np.moveaxis(y, 1, -1)) if channels_last else y


@shape_rule("QLinearAveragePool", domain="com.microsoft")
def _shape(ctx) -> None:
    x = ctx.input_shape(0)
    if not ctx.attr("channels_last", 0) or x is None:
        pool_rule(ctx)
        return
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    spatial = window_out(ctx, x[1:-1], kernel, ceil_mode=bool(ctx.attr("ceil_mode", 0)))
    ctx.set_output(0, ctx.input_elem(0), [x[0]] + spatial + [x[-1]])
