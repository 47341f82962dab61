"""ScatterElements (and the deprecated Scatter): write ``updates`` into a copy of ``data`` at
``indices`` along ``axis``; opset 16 adds ``reduction`` (none/add/mul), opset 18 adds max/min."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor._common import flat_offsets, norm_axis, norm_indices
from onyx.ops.tensor._scatter import scatter_into
from onyx.shape_inference import ShapeContext


def scatter_elements(data, indices, updates, axis: int, reduction: str, name: str) -> np.ndarray:
    x = np.asarray(data)
    idx = np.asarray(indices)
    upd = np.asarray(updates)
    if x.ndim == 0 or idx.ndim != x.ndim or upd.shape != idx.shape:
        raise InvalidArgument(
            f"{name}: data {x.shape}, indices {idx.shape} and updates {upd.shape} must have the same rank "
            f"and indices/updates the same shape"
        )
    ax = norm_axis(axis, x.ndim)
    for d in range(x.ndim):
        if d != ax and idx.shape[d] > x.shape[d]:
            raise InvalidArgument(
                f"{name}: indices shape {idx.shape} exceeds data shape {x.shape} on axis {d}"
            )
    idx = norm_indices(idx, x.shape[ax], f"{name}: indices")
    if upd.dtype != x.dtype:
        upd = upd.astype(x.dtype)
    off = flat_offsets(x.shape, ax, idx)
    out = scatter_into(np.ascontiguousarray(x).reshape(-1), off, upd, reduction, name)
    return out.reshape(x.shape)


@op("Scatter", since=9)
def scatter_9(data, indices, updates, *, axis=0):
    return scatter_elements(data, indices, updates, axis, "none", "Scatter")


@op("ScatterElements", since=11, until=16)
def scatter_elements_11(data, indices, updates, *, axis=0):
    return scatter_elements(data, indices, updates, axis, "none", "ScatterElements")


@op("ScatterElements", since=16, until=18)
def scatter_elements_16(data, indices, updates, *, axis=0, reduction="none"):
    if reduction not in ("none", "add", "mul"):
        raise InvalidArgument(f"ScatterElements-16: reduction must be none, add or mul, got {reduction!r}")
    return scatter_elements(data, indices, updates, axis, reduction, "ScatterElements")


@op("ScatterElements", since=18)
def scatter_elements_18(data, indices, updates, *, axis=0, reduction="none"):
    return scatter_elements(data, indices, updates, axis, reduction, "ScatterElements")


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("ScatterElements")
@shape_rule("Scatter")
def _scatter_elements_shape(ctx: ShapeContext) -> None:
    data, idx, upd = ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2)
    ranks = {len(s) for s in (data, idx, upd) if s is not None}
    if len(ranks) > 1:
        ctx.fail(f"{ctx.node.op_type}: data {data}, indices {idx} and updates {upd} differ in rank")
    ctx.same_as_input(0)
