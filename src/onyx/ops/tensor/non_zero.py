"""NonZero: the indices of the non-zero elements, shape (rank, count), int64."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import ML_FLOATS, ML_INTS
from onyx.shape_inference import ShapeContext


@op("NonZero", since=9)
def non_zero_9(X):
    x = np.asarray(X)
    if x.dtype in ML_FLOATS or x.dtype in ML_INTS:
        x = x.astype(np.float32)
    elif x.dtype == object:
        x = np.vectorize(bool, otypes=[np.bool_])(x) if x.size else np.zeros(x.shape, np.bool_)
    if x.ndim == 0:
        # The spec gives shape (0, N) for a scalar input (numpy would give (1, N)).
        return np.zeros((0, 1 if x.item() else 0), dtype=np.int64)
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("NonZero")
def _non_zero_shape(ctx: ShapeContext) -> None:
    r = ctx.input_rank(0)
    ctx.set_output(0, S.INT64, [r, ctx.new_dim()])
