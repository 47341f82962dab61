"""GlobalAveragePool: mean over all spatial axes, kept as size-1 axes."""

from __future__ import annotations

from onyx.ops.nn._common import back, check_rank, compute_dtype
from onyx.ops.nn._shapes import global_pool_rule
from onyx.ops.registry import op, shape_rule


@op("GlobalAveragePool", since=1)
def global_average_pool(X):
    check_rank(X, 3, "GlobalAveragePool X")
    axes = tuple(range(2, X.ndim))
    ct = compute_dtype(X.dtype)
    return back(X.mean(axis=axes, dtype=ct, keepdims=True), X.dtype)


shape_rule("GlobalAveragePool")(global_pool_rule)
