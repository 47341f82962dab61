"""com.microsoft QLinearGlobalAveragePool: the mean of each channel of a quantized tensor, computed as
onnxruntime does: the int32 sum of the channel less x_zero_point * count, times the float32 multiplier
x_scale / (y_scale * count), rounded half to even, plus y_zero_point, saturated."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import int8 as k8
from onyx.ops.contrib._quantized import check_pair
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule

OP = "QLinearGlobalAveragePool"


@op("QLinearGlobalAveragePool", domain="com.microsoft", since=1)
def qlinear_global_average_pool(x, x_scale, x_zero_point, y_scale, y_zero_point, *, channels_last=0):
    check_pair(x, x_zero_point, "X", "x_zero_point", OP)
    if x.ndim < 3:
        raise InvalidArgument(f"{OP}: X must have rank >= 3, got shape {x.shape}")
    out_dtype, zy = _integer.out_zero_point(y_zero_point, x.dtype, OP)
    if out_dtype != x.dtype:
        raise InvalidArgument(f"{OP}: y_zero_point is {out_dtype} but X is {x.dtype}")
    zx = int(np.asarray(x_zero_point).reshape(-1)[0])
    spatial = tuple(range(1, x.ndim - 1)) if channels_last else tuple(range(2, x.ndim))
    count = math.prod(x.shape[i] for i in spatial)
    sx = _integer.scale_of(x_scale, "x_scale", OP)[0]
    sy = _integer.scale_of(y_scale, "y_scale", OP)[0]
    mult = np.float32(sx / np.float32(sy * np.float32(count))) if count else np.float32(0)
    acc = x.sum(axis=spatial, dtype=np.int64) - zx * count
    y = k8.requantize_numpy(acc.astype(np.int32).reshape(1, -1), mult, None, zy, out_dtype).reshape(acc.shape)
    keep = [1] * x.ndim
    keep[0] = x.shape[0]
    keep[-1 if channels_last else 1] = x.shape[-1 if channels_last else 1]
    return y.reshape(keep)


@shape_rule("QLinearGlobalAveragePool", domain="com.microsoft")
def _shape(ctx) -> None:
    x = ctx.input_shape(0)
    if x is None:
        ctx.set_output(0, ctx.input_elem(0), None)
        return
    if ctx.attr("channels_last", 0):
        ctx.set_output(0, ctx.input_elem(0), [x[0]] + [1] * (len(x) - 2) + [x[-1]])
    else:
        ctx.set_output(0, ctx.input_elem(0), [x[0], x[1]] + [1] * (len(x) - 2))
