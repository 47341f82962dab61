"""com.microsoft NhwcMaxPool: MaxPool on channels-last int8/uint8 tensors (what onnxruntime's NHWC
transformer writes into quantized models); ONNX MaxPool's attributes and output size."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn.max_pool import max_pool_10
from onyx.ops.registry import op, shape_rule


@op("NhwcMaxPool", domain="com.microsoft", since=1)
def nhwc_max_pool(
    x, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape, pads=None, strides=None, _ctx=None
):
    a = np.asarray(x)
    if a.dtype not in (np.int8, np.uint8):
        raise InvalidArgument(f"NhwcMaxPool: input must be int8 or uint8, got {a.dtype}")
    if a.ndim < 3:
        raise InvalidArgument(f"NhwcMaxPool: input must be (N, spatial..., C), got shape {a.shape}")
    nchw = np.moveaxis(a, -1, 1)
    y = max_pool_10(
        nchw, auto_pad=auto_pad, ceil_mode=ceil_mode, dilations=dilations, kernel_shape=kernel_shape,
        pads=pads, strides=strides, _ctx=_ctx,
    )  # fmt: skip
    return np.ascontiguousarray(np.moveaxis(y, 1, -1))


@shape_rule("NhwcMaxPool", domain="com.microsoft")
def _shape(ctx) -> None:
    s = ctx.input_shape(0)
    ctx.set_output(0, ctx.input_elem(0), None if s is None else [s[0]] + [None] * (len(s) - 2) + [s[-1]])
