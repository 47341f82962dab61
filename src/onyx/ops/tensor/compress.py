"""Compress: select slices along an axis (or of the flattened tensor) where ``condition`` is true."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.tensor._common import norm_axis


@op("Compress", since=9)
def compress_9(input, condition, *, axis=None):
    cond = np.asarray(condition)
    if cond.ndim != 1:
        raise InvalidArgument(f"Compress: condition must be 1-D, got shape {cond.shape}")
    if cond.dtype != np.bool_:
        cond = cond != 0
    x = np.asarray(input)
    if axis is None:
        x = x.reshape(-1)
        ax = 0
    else:
        ax = norm_axis(axis, x.ndim)
    n = x.shape[ax]
    if cond.shape[0] > n:
        if cond[n:].any():
            raise InvalidArgument(
                f"Compress: condition of length {cond.shape[0]} selects beyond axis {ax} of size {n} "
                f"(input shape {x.shape})"
            )
        cond = cond[:n]
    (sel,) = np.nonzero(cond)
    return np.take(x, sel, axis=ax)
