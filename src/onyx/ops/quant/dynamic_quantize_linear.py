"""DynamicQuantizeLinear: uint8 quantization with a scale and zero point computed from the data."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op, shape_rule


@op("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear_11(x):
    x = np.asarray(x, dtype=np.float32)
    if x.size:
        hi = max(0.0, float(x.max()))
        lo = min(0.0, float(x.min()))
    else:
        hi = lo = 0.0
    scale = np.float32((np.float32(hi) - np.float32(lo)) / np.float32(255.0))
    if scale == 0:
        # an all-zero (or empty) input: onnxruntime reports scale 1 and zero point 0
        return np.zeros(x.shape, dtype=np.uint8), np.asarray(1.0, np.float32), np.asarray(0, np.uint8)
    zp_f = np.clip(np.rint(np.float32(0.0) - np.float32(lo) / scale), 0, 255)
    zp = np.uint8(zp_f)
    q = np.rint(x / scale)
    q += np.float32(zp)
    np.clip(q, 0, 255, out=q)
    return q.astype(np.uint8), np.asarray(scale, dtype=np.float32), np.asarray(zp, dtype=np.uint8)


@shape_rule("DynamicQuantizeLinear")
def _dynamic_quantize_linear_shape(ctx) -> None:
    """y: uint8 of x's shape; y_scale: float scalar; y_zero_point: uint8 scalar."""
    ctx.set_output(0, 2, ctx.input_shape(0))
    ctx.set_output(1, 1, [])
    ctx.set_output(2, 2, [])
