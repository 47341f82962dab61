"""LRN: local response normalization across channels (window sums by a cumulative sum)."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, check_rank, compute_dtype
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("LRN", since=1)
def lrn(X, *, alpha=1e-4, beta=0.75, bias=1.0, size):
    check_rank(X, 3, "LRN X")
    if size <= 0:
        raise InvalidArgument(f"LRN: size must be positive, got {size}")
    ct = compute_dtype(X.dtype)
    x = X.astype(ct, copy=False)
    c = x.shape[1]
    lo = (size - 1) // 2
    hi = math.ceil((size - 1) / 2)
    sq = np.square(x, dtype=np.float64 if ct == np.float64 else np.float32)
    cs = np.zeros((x.shape[0], c + 1) + x.shape[2:], dtype=sq.dtype)
    np.cumsum(sq, axis=1, out=cs[:, 1:])
    idx = np.arange(c)
    top = np.minimum(idx + hi, c - 1) + 1
    bot = np.maximum(idx - lo, 0)
    ssum = cs[:, top] - cs[:, bot]
    ssum *= alpha / size
    ssum += bias
    y = x / np.power(ssum, beta).astype(ct, copy=False)
    return back(y, X.dtype)


shape_rule("LRN")(same_shape_rule)
