"""Concat: join tensors along an axis (axis defaults to 1 in opset 1, required from opset 4)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.symbolic import Sym
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import norm_axis
from onyx.shape_inference import ShapeContext


def _concat(xs, axis: int) -> np.ndarray:
    if not xs:
        raise InvalidArgument("Concat: needs at least one input")
    arrays = [np.asarray(x) for x in xs]
    rank = arrays[0].ndim
    if rank == 0:
        raise InvalidArgument("Concat: inputs must have rank >= 1, got a scalar")
    ax = norm_axis(axis, rank)
    shapes = [a.shape for a in arrays]
    for s in shapes:
        if len(s) != rank or any(s[d] != shapes[0][d] for d in range(rank) if d != ax):
            raise InvalidArgument(f"Concat: input shapes {shapes} do not match except on axis {ax}")
    if len(arrays) == 1:
        return arrays[0]
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) > 1:
        raise InvalidArgument(f"Concat: inputs have different element types {sorted(map(str, dtypes))}")
    return np.concatenate(arrays, axis=ax)


@op("Concat", since=1, until=4)
def concat_1(*inputs, axis=1):
    return _concat(inputs, axis)


@op("Concat", since=4)
def concat_4(*inputs, axis):
    return _concat(inputs, axis)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Concat")
def _concat_shape(ctx: ShapeContext) -> None:
    present = [i for i in range(ctx.num_inputs) if ctx.has_input(i)]
    elem = next((ctx.input_elem(i) for i in present if ctx.input_elem(i) is not None), None)
    shapes = [ctx.input_shape(i) for i in present]
    if _concat_values(ctx, present):
        return
    ranks = {len(s) for s in shapes if s is not None}
    if not ranks:
        ctx.set_output(0, elem, None)
        return
    if len(ranks) > 1:
        ctx.fail(f"Concat: inputs have different ranks {sorted(ranks)}")
    rank = ranks.pop()
    if rank == 0:
        ctx.fail("Concat: inputs must have rank >= 1, got a scalar")
    ax = S.norm_axis(ctx, ctx.attr("axis", 1), rank)
    out: list = [None] * rank
    for d in range(rank):
        if d == ax:
            total = 0
            for s in shapes:
                total = None if s is None or s[d] is None or total is None else total + s[d]
            out[d] = total
            continue
        for s in shapes:
            if s is None:
                continue
            if S.same(out[d], s[d]) is False:
                ctx.fail(f"Concat: input shapes {shapes} differ on axis {d}")
            out[d] = S.merge(out[d], s[d])
    ctx.set_output(0, elem, out)


def _concat_values(ctx: ShapeContext, present: list[int]) -> bool:
    """Shape arithmetic the kernel refuses: int64 and symbolic (object) vectors mixed."""
    vals = [ctx.input_value(i) for i in present]
    if ctx.attr("axis", 1) not in (0, -1) or not vals:
        return False
    if any(v is None or np.asarray(v).ndim != 1 for v in vals):
        return False
    arrays = [np.asarray(v) for v in vals]
    if not all(a.dtype == object or a.dtype.kind in "iu" for a in arrays):
        return False
    if not any(a.dtype == object for a in arrays):
        return False  # numeric values the kernel refused (mixed int types): leave it to the run
    out = np.concatenate([a.astype(object) for a in arrays])
    if not any(isinstance(x, Sym) for x in out.tolist()):
        out = out.astype(np.int64)
    ctx.set_output_value(0, out, S.INT64)
    return True
