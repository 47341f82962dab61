"""ImageScaler (ONNX's experimental op, kept by onnxruntime as a contrib kernel in the default domain):
``scale * x + bias[c]`` on an [N, C, H, W] image (old CoreML/Keras conversions write it)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._common import rule_like_input0
from onyx.ops.registry import op, shape_rule


@op("ImageScaler", since=1, until=10)  # removed from ONNX at opset 10; onnxruntime runs it below
def image_scaler(input, *, scale=1.0, bias=None):  # noqa: A002 - the input's name
    x = np.asarray(input)
    if x.ndim != 4:
        raise InvalidArgument(f"ImageScaler: input must be [N, C, H, W], got shape {x.shape}")
    b = np.asarray(bias if bias is not None else [], dtype=x.dtype)
    if b.size != x.shape[1]:
        raise InvalidArgument(f"ImageScaler: bias has {b.size} values for {x.shape[1]} channels")
    y = x * x.dtype.type(scale)
    y += b[None, :, None, None]
    return y


@shape_rule("ImageScaler")
def _shape(ctx) -> None:
    rule_like_input0(ctx)
