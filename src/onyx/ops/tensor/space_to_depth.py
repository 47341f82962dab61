"""SpaceToDepth: move spatial blocks into channels (opset 28 adds ``mode``: DCR or CRD)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.shape_inference import ShapeContext


def space_to_depth(x: np.ndarray, blocksize: int, mode: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 4:
        raise InvalidArgument(f"SpaceToDepth: input must be 4-D (N, C, H, W), got shape {x.shape}")
    b = int(blocksize)
    n, c, h, w = x.shape
    if b <= 0 or h % b or w % b:
        raise InvalidArgument(f"SpaceToDepth: spatial dims ({h}, {w}) not divisible by blocksize {b}")
    y = x.reshape(n, c, h // b, b, w // b, b)
    if mode == "DCR":
        y = y.transpose(0, 3, 5, 1, 2, 4)
    elif mode == "CRD":
        y = y.transpose(0, 1, 3, 5, 2, 4)
    else:
        raise InvalidArgument(f"SpaceToDepth: mode must be 'DCR' or 'CRD', got {mode!r}")
    return y.reshape(n, c * b * b, h // b, w // b)


@op("SpaceToDepth", since=1, until=28)
def space_to_depth_1(input, *, blocksize):
    return space_to_depth(input, blocksize, "DCR")


@op("SpaceToDepth", since=28)
def space_to_depth_28(input, *, blocksize, mode="DCR"):
    return space_to_depth(input, blocksize, mode)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("SpaceToDepth")
def _space_to_depth_shape(ctx: ShapeContext) -> None:
    dims = S.nchw_and_blocksize(ctx, "SpaceToDepth")
    if dims is None:
        return
    n, c, h, w, b = dims
    if b <= 0 or any(S.is_int(d) and d % b for d in (h, w)):
        ctx.fail(f"SpaceToDepth: spatial dims ({h}, {w}) not divisible by blocksize {b}")
    ctx.set_output(
        0, ctx.input_elem(0), [n, None if c is None else c * b * b, S.div_exact(h, b), S.div_exact(w, b)]
    )
