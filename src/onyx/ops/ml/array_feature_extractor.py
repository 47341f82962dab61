"""ArrayFeatureExtractor: select elements along the last axis of X by the int64 indices Y."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import rows_of
from onyx.ops.registry import op, shape_rule


@op("ArrayFeatureExtractor", domain="ai.onnx.ml", since=1)
def array_feature_extractor_1(X, Y):
    X = np.asarray(X)
    idx = np.asarray(Y, dtype=np.int64).reshape(-1)
    if X.ndim == 0:
        raise InvalidArgument("ArrayFeatureExtractor: X must have rank >= 1")
    n = X.shape[-1]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise InvalidArgument(
            f"ArrayFeatureExtractor: indices {idx.tolist()} out of range for last dimension {n}"
        )
    if X.ndim == 1:
        return X[idx].reshape(1, -1)
    return np.take(X, idx, axis=-1)


@shape_rule("ArrayFeatureExtractor", domain="ai.onnx.ml")
def _array_feature_extractor_shape(ctx) -> None:
    """X's dims with the last one replaced by the number of indices; a 1-D X gives [1, count]."""
    x, y = ctx.input_shape(0), ctx.input_shape(1)
    if x is not None and not x:
        ctx.fail("X must have rank >= 1")
    count = None
    if y is not None:
        count = 1
        for d in y:
            count = None if d is None or count is None else count * d
    if x is None:
        ctx.set_output(0, ctx.input_elem(0), None)
    elif len(x) == 1:
        ctx.set_output(0, ctx.input_elem(0), [rows_of(x), count])
    else:
        ctx.set_output(0, ctx.input_elem(0), [*x[:-1], count])
