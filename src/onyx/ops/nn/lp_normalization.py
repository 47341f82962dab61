"""LpNormalization: x / ||x||_p along one axis (p = 1 or 2); zero norms give zeros."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._norm import norm_axis
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("LpNormalization", since=1)
def lp_normalization(input, *, axis=-1, p=2):
    x = input.astype(compute_dtype(input.dtype), copy=False)
    ax = norm_axis(axis, max(x.ndim, 1), "LpNormalization")
    if p == 2:
        n = np.sqrt(np.square(x).sum(axis=ax, keepdims=True))
    elif p == 1:
        n = np.abs(x).sum(axis=ax, keepdims=True)
    else:
        raise InvalidArgument(f"LpNormalization: p must be 1 or 2, got {p}")
    zero = n == 0
    n[zero] = 1
    y = x / n
    if zero.any():
        y = np.where(zero, 0, y).astype(y.dtype, copy=False)
    return back(y, input.dtype)


shape_rule("LpNormalization")(same_shape_rule)
