"""GlobalAveragePool: mean over all spatial axes, kept as size-1 axes."""

from __future__ import annotations

import numpy as np

from onyx.ops.nn._common import back, check_rank, compute_dtype
from onyx.ops.nn._shapes import global_pool_rule
from onyx.ops.registry import op, shape_rule


@op("GlobalAveragePool", since=1)
def global_average_pool(X):
    check_rank(X, 3, "GlobalAveragePool X")
    ct = compute_dtype(X.dtype)
    n, c = X.shape[:2]
    hw = int(np.prod(X.shape[2:]))
    out_shape = (n, c) + (1,) * (X.ndim - 2)
    x = X.astype(ct, copy=False)
    if 0 < hw <= 8192 and x.flags.c_contiguous:
        # a matrix-vector product (BLAS) instead of numpy's reduction over the trailing axes
        y = np.matmul(x.reshape(n * c, hw), np.full((hw, 1), 1.0 / hw, dtype=ct))
    else:
        y = x.mean(axis=tuple(range(2, X.ndim)), dtype=ct)
    return back(y.reshape(out_shape), X.dtype)


shape_rule("GlobalAveragePool")(global_pool_rule)
