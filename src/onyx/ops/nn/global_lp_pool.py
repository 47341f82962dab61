"""GlobalLpPool: (sum of |x|^p over all spatial axes)^(1/p), kept as size-1 axes."""

from __future__ import annotations

import numpy as np

from onyx.ops.nn._common import back, check_rank, compute_dtype
from onyx.ops.nn._shapes import global_pool_rule
from onyx.ops.registry import op, shape_rule


def _run(X, p):
    check_rank(X, 3, "GlobalLpPool X")
    axes = tuple(range(2, X.ndim))
    x = np.abs(X.astype(compute_dtype(X.dtype), copy=False))
    p = float(p)
    if p == 2:
        y = np.sqrt(np.square(x).sum(axis=axes, keepdims=True))
    else:
        y = np.power((x**p).sum(axis=axes, keepdims=True), 1.0 / p)
    return back(y, X.dtype)


@op("GlobalLpPool", since=1, until=2)
def global_lp_pool_1(X, *, p=2.0):
    return _run(X, p)


@op("GlobalLpPool", since=2)
def global_lp_pool_2(X, *, p=2):
    return _run(X, p)


shape_rule("GlobalLpPool")(global_pool_rule)
