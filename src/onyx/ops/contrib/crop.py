"""Crop (ONNX's experimental op, an onnxruntime contrib kernel in the default domain): cut the borders
(left, top, right, bottom) of an [N, C, H, W] image, or a ``scale`` = (height, width) window from the
top-left border."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule


def _window(h, w, border, scale) -> tuple[int, int, int, int]:
    if len(border) != 4:
        raise InvalidArgument(
            f"Crop: border must hold 4 values (left, top, right, bottom), got {list(border)}"
        )
    left, top, right, bottom = (int(v) for v in border)
    if scale:
        if len(scale) != 2:
            raise InvalidArgument(f"Crop: scale must hold 2 values (height, width), got {list(scale)}")
        bottom_limit, right_limit = top + int(scale[0]), left + int(scale[1])
    else:
        bottom_limit, right_limit = h - bottom, w - right
    if min(left, top) < 0 or bottom_limit > h or right_limit > w or bottom_limit < top or right_limit < left:
        raise InvalidArgument(
            f"Crop: border {list(border)} and scale {list(scale or [])} do not fit an image of {h}x{w}"
        )
    return top, bottom_limit, left, right_limit


@op("Crop", since=1, until=10)  # removed from ONNX at opset 10; onnxruntime runs it below
def crop(input, *, border, scale=None):  # noqa: A002 - the input's name
    x = np.asarray(input)
    if x.ndim != 4:
        raise InvalidArgument(f"Crop: input must be [N, C, H, W], got shape {x.shape}")
    t, b, left, r = _window(x.shape[2], x.shape[3], border, scale)
    return np.ascontiguousarray(x[:, :, t:b, left:r])


@shape_rule("Crop")
def _shape(ctx) -> None:
    s = ctx.input_shape(0)
    if s is None or len(s) != 4 or not all(isinstance(d, int) for d in s[2:]):
        ctx.set_output(0, ctx.input_elem(0), None if s is None else [s[0], s[1], None, None])
        return
    t, b, left, r = _window(s[2], s[3], ctx.attr("border", []), ctx.attr("scale", None))
    ctx.set_output(0, ctx.input_elem(0), [s[0], s[1], b - t, r - left])
