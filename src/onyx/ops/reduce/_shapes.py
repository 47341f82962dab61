"""Shape rules shared by the Reduce* ops and ArgMax/ArgMin."""

from __future__ import annotations

import numpy as np

from onyx.ops.tensor import _shapes as S
from onyx.shape_inference import ShapeContext


def reduce_shape_rule(ctx: ShapeContext) -> None:
    """Reduce*: the reduced axes become 1 (keepdims) or go; axes from the attribute (old opsets) or
    the optional input (new ones); none or empty means all axes, or nothing with noop_with_empty_axes."""
    elem = ctx.input_elem(0)
    src = ctx.input_shape(0)
    keep = bool(ctx.attr("keepdims", 1))
    given, axes = S.axes_arg(ctx, 1)
    if given and axes is None:  # an axes input whose value is not known now
        if src is None:
            ctx.set_output(0, elem, None)
        elif keep:
            ctx.set_output(0, elem, S.fresh(ctx, len(src)))
        else:
            n = S.vector_length(ctx, 1)
            ctx.set_output(0, elem, None if n is None or n == 0 else S.fresh(ctx, len(src) - n))
        return
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0):
            ctx.same_as_input(0)
            return
        if src is None:
            ctx.set_output(0, elem, None)
            return
        ctx.set_output(0, elem, [1] * len(src) if keep else [])
        _symbolic_value(ctx, None, keep)
        return
    if src is None:
        ctx.set_output(0, elem, None)
        return
    plain = S.plain_ints(axes)
    if plain is None:
        ctx.set_output(0, elem, S.fresh(ctx, len(src) if keep else len(src) - len(axes)))
        return
    r = len(src)
    if r == 0:
        if any(a not in (0, -1) for a in plain):
            ctx.fail(f"axes {plain} out of range for a scalar")
        ctx.set_output(0, elem, [])
        return
    ax = set(S.norm_axes(ctx, plain, r))
    ctx.set_output(0, elem, [1 if i in ax else d for i, d in enumerate(src) if keep or i not in ax])
    _symbolic_value(ctx, tuple(sorted(ax)), keep)


def _symbolic_value(ctx: ShapeContext, axes: tuple[int, ...] | None, keep: bool) -> None:
    """ReduceProd/ReduceSum of a symbolic shape vector (numel = ReduceProd(Shape(x))): the driver folds
    numeric values itself but leaves symbolic ones to the rule."""
    value = ctx.input_value(0)
    fn = {"ReduceProd": np.prod, "ReduceSum": np.sum}.get(ctx.node.op_type)
    if fn is None or value is None or np.asarray(value).dtype != object:
        return
    arr = np.asarray(value)
    res = fn(arr, axis=axes, keepdims=keep)
    ctx.set_output_value(0, S.value_array(np.asarray(res, dtype=object)), S.INT64)


def arg_shape_rule(ctx: ShapeContext) -> None:
    """ArgMax/ArgMin: int64 indices; the axis becomes 1 (keepdims) or goes."""
    src = ctx.input_shape(0)
    if src is None:
        ctx.set_output(0, S.INT64, None)
        return
    if not src:
        S.norm_axis(ctx, ctx.attr("axis", 0), 1)
        ctx.set_output(0, S.INT64, [])
        return
    ax = S.norm_axis(ctx, ctx.attr("axis", 0), len(src))
    keep = bool(ctx.attr("keepdims", 1))
    ctx.set_output(0, S.INT64, [1 if i == ax else d for i, d in enumerate(src) if keep or i != ax])
