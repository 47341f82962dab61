"""GlobalMaxPool: max over all spatial axes, kept as size-1 axes."""

from __future__ import annotations

from onyx.ops.nn._common import back, check_rank, compute_dtype
from onyx.ops.nn._shapes import global_pool_rule
from onyx.ops.registry import op, shape_rule


@op("GlobalMaxPool", since=1)
def global_max_pool(X):
    check_rank(X, 3, "GlobalMaxPool X")
    axes = tuple(range(2, X.ndim))
    x = X.astype(compute_dtype(X.dtype), copy=False)
    return back(x.max(axis=axes, keepdims=True), X.dtype)


shape_rule("GlobalMaxPool")(global_pool_rule)
