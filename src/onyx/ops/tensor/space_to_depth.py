"""SpaceToDepth: move spatial blocks into channels (opset 28 adds ``mode``: DCR or CRD)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op


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
