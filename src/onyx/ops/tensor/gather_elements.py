"""GatherElements: ``out[i][j][k] = data[i][indices[i][j][k]][k]`` (for axis 1), and so on."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor._common import flat_offsets, norm_axis, norm_indices
from onyx.shape_inference import ShapeContext


@op("GatherElements", since=11)
def gather_elements_11(data, indices, *, axis=0):
    x = np.asarray(data)
    idx = np.asarray(indices)
    if x.ndim == 0 or idx.ndim != x.ndim:
        raise InvalidArgument(
            f"GatherElements: data and indices must have the same rank >= 1, got {x.shape} and {idx.shape}"
        )
    ax = norm_axis(axis, x.ndim)
    for d in range(x.ndim):
        if d != ax and idx.shape[d] > x.shape[d]:
            raise InvalidArgument(
                f"GatherElements: indices shape {idx.shape} exceeds data shape {x.shape} on axis {d}"
            )
    idx = norm_indices(idx, x.shape[ax], "GatherElements: indices")
    off = flat_offsets(x.shape, ax, idx)
    return np.take(np.ascontiguousarray(x).reshape(-1), off)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("GatherElements")
def _gather_elements_shape(ctx: ShapeContext) -> None:
    data, idx = ctx.input_shape(0), ctx.input_shape(1)
    if data is not None and idx is not None and len(data) != len(idx):
        ctx.fail(f"GatherElements: data {data} and indices {idx} must have the same rank")
    ctx.set_output(0, ctx.input_elem(0), idx)
