"""GatherND: gather slices of ``data`` addressed by the last dimension of ``indices`` (batch_dims v12+)."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import check_index_dtype
from onyx.shape_inference import ShapeContext


def gather_nd(data, indices, batch_dims: int = 0) -> np.ndarray:
    x = np.asarray(data)
    idx = check_index_dtype(indices, "GatherND: indices")
    b = int(batch_dims)
    if x.ndim < 1 or idx.ndim < 1:
        raise InvalidArgument(f"GatherND: data and indices must have rank >= 1, got {x.shape}, {idx.shape}")
    if b < 0 or b >= min(x.ndim, idx.ndim):
        raise InvalidArgument(f"GatherND: batch_dims {b} too large for shapes {x.shape}, {idx.shape}")
    if x.shape[:b] != idx.shape[:b]:
        raise InvalidArgument(f"GatherND: batch dims differ: data {x.shape}, indices {idx.shape}")
    k = idx.shape[-1]
    if k > x.ndim - b:
        raise InvalidArgument(
            f"GatherND: indices last dim {k} exceeds data rank {x.ndim} minus batch_dims {b}"
        )
    batch = x.shape[:b]
    nb = math.prod(batch)
    q_shape = idx.shape[b:-1]
    nq = math.prod(q_shape)
    xr = x.reshape((nb,) + x.shape[b:])
    ir = idx.reshape(nb, nq, k)
    key: list[np.ndarray] = [np.broadcast_to(np.arange(nb)[:, None], (nb, nq))]
    for j in range(k):
        dim = xr.shape[1 + j]
        col = ir[..., j]
        if col.size and (int(col.min()) < -dim or int(col.max()) >= dim):
            raise InvalidArgument(
                f"GatherND: index out of range for dimension {b + j} of size {dim} (data shape {x.shape})"
            )
        key.append(col)
    out = xr[tuple(key)]
    return out.reshape(batch + q_shape + x.shape[b + k :])


@op("GatherND", since=11, until=12)
def gather_nd_11(data, indices):
    return gather_nd(data, indices, 0)


@op("GatherND", since=12)
def gather_nd_12(data, indices, *, batch_dims=0):
    return gather_nd(data, indices, batch_dims)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("GatherND")
def _gather_nd_shape(ctx: ShapeContext) -> None:
    elem = ctx.input_elem(0)
    data, idx = ctx.input_shape(0), ctx.input_shape(1)
    b = int(ctx.attr("batch_dims", 0))
    if data is None or idx is None or not idx or not S.is_int(idx[-1]):
        ctx.set_output(0, elem, None)
        return
    k = int(idx[-1])
    if k > len(data) - b or b < 0 or b >= min(len(data), len(idx)):
        ctx.fail(f"GatherND: indices {idx} (batch_dims {b}) do not fit data {data}")
    lead = [S.merge(d, i) for d, i in zip(data[:b], idx[:b])]
    ctx.set_output(0, elem, lead + idx[b:-1] + data[b + k :])
