"""DepthToSpace: move channel blocks into spatial blocks (DCR or CRD order, opset 11 adds ``mode``)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.shape_inference import ShapeContext


def depth_to_space(x: np.ndarray, blocksize: int, mode: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 4:
        raise InvalidArgument(f"DepthToSpace: input must be 4-D (N, C, H, W), got shape {x.shape}")
    b = int(blocksize)
    n, c, h, w = x.shape
    if b <= 0 or c % (b * b):
        raise InvalidArgument(f"DepthToSpace: channels {c} not divisible by blocksize^2 ({b}^2)")
    oc = c // (b * b)
    if mode == "DCR":
        y = x.reshape(n, b, b, oc, h, w).transpose(0, 3, 4, 1, 5, 2)
    elif mode == "CRD":
        y = x.reshape(n, oc, b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    else:
        raise InvalidArgument(f"DepthToSpace: mode must be 'DCR' or 'CRD', got {mode!r}")
    return y.reshape(n, oc, h * b, w * b)


@op("DepthToSpace", since=1, until=11)
def depth_to_space_1(input, *, blocksize):
    return depth_to_space(input, blocksize, "DCR")


@op("DepthToSpace", since=11)
def depth_to_space_11(input, *, blocksize, mode="DCR"):
    return depth_to_space(input, blocksize, mode)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("DepthToSpace")
def _depth_to_space_shape(ctx: ShapeContext) -> None:
    dims = S.nchw_and_blocksize(ctx, "DepthToSpace")
    if dims is None:
        return
    n, c, h, w, b = dims
    if b <= 0 or S.is_int(c) and c % (b * b):
        ctx.fail(f"DepthToSpace: channels {c} not divisible by blocksize^2 ({b}^2)")
    ctx.set_output(
        0,
        ctx.input_elem(0),
        [n, S.div_exact(c, b * b), None if h is None else h * b, None if w is None else w * b],
    )
