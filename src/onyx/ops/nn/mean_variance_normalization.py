"""MeanVarianceNormalization: (X - E[X]) / (sqrt(Var[X]) + 1e-9) over the given axes."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("MeanVarianceNormalization", since=9)
def mean_variance_normalization(X, *, axes=(0, 2, 3)):
    r = X.ndim
    ax = tuple(a + r if a < 0 else a for a in axes)
    if any(not 0 <= a < r for a in ax):
        raise InvalidArgument(f"MeanVarianceNormalization: axes {list(axes)} out of range for X {X.shape}")
    x = X.astype(compute_dtype(X.dtype), copy=False)
    m = x.mean(axis=ax, keepdims=True)
    d = x - m
    std = np.sqrt(np.square(d).mean(axis=ax, keepdims=True))
    std += x.dtype.type(1e-9)
    d /= std
    return back(d, X.dtype)


shape_rule("MeanVarianceNormalization")(same_shape_rule)
