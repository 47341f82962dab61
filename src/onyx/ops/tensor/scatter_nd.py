"""ScatterND: write ``updates`` into a copy of ``data`` at the index tuples in ``indices``;
opset 16 adds ``reduction`` (none/add/mul), opset 18 adds max/min."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor._common import check_index_dtype
from onyx.ops.tensor._scatter import scatter_into
from onyx.shape_inference import ShapeContext


def scatter_nd(data, indices, updates, reduction: str = "none") -> np.ndarray:
    x = np.asarray(data)
    idx = check_index_dtype(indices, "ScatterND: indices")
    upd = np.asarray(updates)
    if idx.ndim < 1:
        raise InvalidArgument(f"ScatterND: indices must have rank >= 1, got shape {idx.shape}")
    k = idx.shape[-1]
    if k > x.ndim:
        raise InvalidArgument(f"ScatterND: indices last dim {k} exceeds data rank {x.ndim} (shape {x.shape})")
    expected = idx.shape[:-1] + x.shape[k:]
    if upd.shape != expected:
        raise InvalidArgument(
            f"ScatterND: updates shape {upd.shape} should be {expected} (data {x.shape}, indices {idx.shape})"
        )
    key = []
    for j in range(k):
        col = idx[..., j]
        dim = x.shape[j]
        if col.size and (int(col.min()) < -dim or int(col.max()) >= dim):
            raise InvalidArgument(f"ScatterND: index out of range for dimension {j} of size {dim}")
        key.append(col)
    if upd.dtype != x.dtype:
        upd = upd.astype(x.dtype)
    return scatter_into(x, tuple(key), upd, reduction, "ScatterND")


@op("ScatterND", since=11, until=16)
def scatter_nd_11(data, indices, updates):
    return scatter_nd(data, indices, updates)


@op("ScatterND", since=16, until=18)
def scatter_nd_16(data, indices, updates, *, reduction="none"):
    if reduction not in ("none", "add", "mul"):
        raise InvalidArgument(f"ScatterND-16: reduction must be none, add or mul, got {reduction!r}")
    return scatter_nd(data, indices, updates, reduction)


@op("ScatterND", since=18)
def scatter_nd_18(data, indices, updates, *, reduction="none"):
    return scatter_nd(data, indices, updates, reduction)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("ScatterND")
def _scatter_nd_shape(ctx: ShapeContext) -> None:
    ctx.same_as_input(0)
