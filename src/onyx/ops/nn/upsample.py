"""Upsample (v1-v10; deprecated in favour of Resize): nearest or (bi)linear, asymmetric coordinates."""

from __future__ import annotations

from onyx.errors import InvalidArgument
from onyx.ops.nn._shapes import resize_rule
from onyx.ops.nn.resize import resize_legacy
from onyx.ops.registry import op, shape_rule


@op("Upsample", since=1, until=7)
def upsample_1(X, *, height_scale, mode="nearest", width_scale):
    if X.ndim != 4:
        raise InvalidArgument(f"Upsample-1: X of shape {X.shape} must be 4-D (N, C, H, W)")
    return resize_legacy(X, [1.0, 1.0, float(height_scale), float(width_scale)], mode)


@op("Upsample", since=7, until=9)
def upsample_7(X, *, mode="nearest", scales):
    return resize_legacy(X, scales, mode)


@op("Upsample", since=9)
def upsample_9(X, scales, *, mode="nearest"):
    return resize_legacy(X, scales, mode)


shape_rule("Upsample")(resize_rule)
