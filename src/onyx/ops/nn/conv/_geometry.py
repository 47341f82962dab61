"""A convolution's checked geometry, computed once per shape signature and shared by the strategies."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import as_ints, norm_auto_pad, window_geometry


class Geometry(NamedTuple):
    """Strides, dilations, begin pads, end pads (extended so every window fits), output spatial shape,
    output positions, kernel positions."""

    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pb: tuple[int, ...]
    pe: tuple[int, ...]
    out: tuple[int, ...]
    positions: int
    kernel_positions: int


def key(v):
    """An attribute value as an lru_cache key: sequences as tuples."""
    return v if v is None or isinstance(v, (str, bytes, int)) else tuple(v)


@lru_cache(maxsize=1024)
def geometry(x_shape, w_shape, group, kernel_shape, pads, strides, dilations, auto_pad) -> Geometry:
    """The geometry of X of ``x_shape`` convolved with W of ``w_shape`` (attributes as cache keys)."""
    nd = len(x_shape) - 2
    if len(w_shape) != len(x_shape):
        raise InvalidArgument(f"Conv: W of shape {w_shape} must have the rank of X {x_shape}")
    c = x_shape[1]
    m, cg = w_shape[:2]
    kernel = tuple(w_shape[2:])
    if kernel_shape:
        ks = tuple(int(k) for k in kernel_shape)
        if ks != kernel:
            raise InvalidArgument(f"Conv: kernel_shape {ks} does not match W of shape {w_shape}")
    if group <= 0 or c != cg * group or m % group:
        raise InvalidArgument(
            f"Conv: X of shape {x_shape} and W of shape {w_shape} do not agree with group={group} "
            "(need C = W.shape[1] * group and M divisible by group)"
        )
    strides = as_ints(strides, nd, 1, "strides")
    dilations = as_ints(dilations, nd, 1, "dilations")
    pads = as_ints(pads, 2 * nd, 0, "pads")
    ap = norm_auto_pad(auto_pad)
    pb, pe, out, _ = window_geometry(tuple(x_shape[2:]), kernel, strides, dilations, pads, ap)
    return Geometry(strides, dilations, pb, pe, out, math.prod(out), math.prod(kernel))
