"""CenterCropPad: crop or zero-pad each listed axis to a target size, centred."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import int_list, norm_axes
from onyx.shape_inference import ShapeContext


@op("CenterCropPad", since=18)
def center_crop_pad_18(input_data, shape, *, axes=None):
    x = np.asarray(input_data)
    target = int_list(shape, "CenterCropPad: shape")
    axes = list(range(x.ndim)) if axes is None else norm_axes(axes, x.ndim, "CenterCropPad: axes")
    if len(target) != len(axes):
        raise InvalidArgument(f"CenterCropPad: shape {target} has {len(target)} entries for axes {axes}")
    if any(t < 0 for t in target):
        raise InvalidArgument(f"CenterCropPad: shape {target} has a negative size")
    src = [slice(None)] * x.ndim
    dst = [slice(None)] * x.ndim
    out_shape = list(x.shape)
    pad = False
    for a, t in zip(axes, target):
        d = x.shape[a]
        out_shape[a] = t
        if t < d:
            b = (d - t) // 2
            src[a] = slice(b, b + t)
        elif t > d:
            b = (t - d) // 2
            dst[a] = slice(b, b + d)
            pad = True
    cropped = x[tuple(src)]
    if not pad:
        return cropped
    out = np.zeros(out_shape, dtype=x.dtype)
    out[tuple(dst)] = cropped
    return out


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("CenterCropPad")
@S.with_input_shape()
def _center_crop_pad_shape(ctx: ShapeContext, elem: int | None, src: list) -> None:
    axes_attr = ctx.attr("axes", None)
    axes = list(range(len(src))) if axes_attr is None else S.norm_axes(ctx, axes_attr, len(src))
    target = S.int_values(ctx, 1)
    out = list(src)
    if target is not None and len(target) != len(axes):
        ctx.fail(f"CenterCropPad: shape {target} has {len(target)} entries for axes {axes}")
    for i, a in enumerate(axes):
        out[a] = ctx.new_dim() if target is None else target[i]
    ctx.set_output(0, elem, out)
