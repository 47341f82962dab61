"""com.microsoft MaxpoolWithMask: onnxruntime's "for internal use" max pooling that stops at masked
positions, reproduced with its quirks (so that models carrying it run the same):

- the mask plane of channel c (c counting over N * C) starts at element ``(c * H * W...) % (Nm * Cm)``
  of the mask (Nm, Cm its first two dims), so a (1, 1, spatial...) mask applies to every channel;
- within a window, each run over the last spatial axis stops at its first position whose mask is 0
  (with 2 or 3 spatial axes, the plane's first position never counts as masked);
- a window with nothing left gives the lowest float.
"""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._pool import pool_setup
from onyx.ops.registry import op, shape_rule

LOWEST = np.finfo(np.float32).min
#: output positions (one Python step each) between two checks of the run's stop (huge pads make millions)
POSITIONS_PER_STOP_CHECK = 1024


def _mask_planes(m: np.ndarray, channels: int, plane: int) -> np.ndarray:
    """(channels, plane) mask values, as onnxruntime's per-channel offset reads them."""
    flat = m.reshape(-1)
    total = m.shape[0] * m.shape[1]
    starts = (np.arange(channels) * plane) % total
    index = starts[:, None] + np.arange(plane)[None, :]
    if index.size and index.max() >= flat.size:
        raise InvalidArgument(f"MaxpoolWithMask: the mask {m.shape} is too small for the input's channels")
    return flat[index]


@op("MaxpoolWithMask", domain="com.microsoft", since=1)
def maxpool_with_mask(
    X, M, *, auto_pad="NOTSET", kernel_shape=None, pads=None, storage_order=0, strides=None, _ctx=None
):  # noqa: N803
    x, m = np.asarray(X), np.asarray(M)
    if x.dtype != np.float32 or m.dtype != np.int32:
        raise InvalidArgument(f"MaxpoolWithMask: X must be float and M int32, got {x.dtype} and {m.dtype}")
    if x.ndim < 3 or x.ndim > 5 or m.ndim != x.ndim or m.shape[2:] != x.shape[2:]:
        raise InvalidArgument(
            f"MaxpoolWithMask: X {x.shape} and M {m.shape} must share rank (3 to 5) and spatial dims"
        )
    if x.shape[0] * x.shape[1] and m.shape[0] * m.shape[1] == 0:
        raise InvalidArgument(f"MaxpoolWithMask: the mask's N and C must be positive, got {m.shape}")
    kernel, strides_, _, pb, _, out, _ = pool_setup(
        x, kernel_shape, strides, pads, None, auto_pad, 0, "MaxpoolWithMask"
    )
    spatial = x.shape[2:]
    channels, plane = x.shape[0] * x.shape[1], math.prod(spatial)
    xs = x.reshape((channels,) + spatial)
    valid = _mask_planes(m, channels, plane) != 0
    if len(spatial) >= 2:
        valid[:, 0] = True
    valid = valid.reshape((channels,) + spatial)
    y = np.empty((channels,) + tuple(out), np.float32)
    stop = getattr(_ctx, "stop", None)
    for count, pos in enumerate(np.ndindex(*out)):
        if stop is not None and count % POSITIONS_PER_STOP_CHECK == 0:
            stop.check(f"MaxpoolWithMask (output position {pos} of {tuple(out)})")
        window = []
        for p, k, s, b, size in zip(pos, kernel, strides_, pb, spatial):
            start = p * s - b
            window.append(slice(max(start, 0), min(start + k, size)))
        sub = xs[(slice(None), *window)]
        ok = np.cumprod(valid[(slice(None), *window)], axis=-1).astype(bool)
        picked = np.where(ok, sub, LOWEST).reshape(channels, -1)
        y[(slice(None), *pos)] = picked.max(axis=1, initial=LOWEST)
    return y.reshape(x.shape[:2] + tuple(out))


@shape_rule("MaxpoolWithMask", domain="com.microsoft")
def _shape(ctx) -> None:
    s = ctx.input_shape(0)
    ctx.set_output(0, ctx.input_elem(0), None if s is None else list(s[:2]) + [None] * (len(s) - 2))
