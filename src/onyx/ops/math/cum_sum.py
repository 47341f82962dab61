"""CumSum: cumulative sum along an axis given as an input; ``exclusive`` and ``reverse`` attributes."""

import numpy as np

from onyx.ops.math._common import norm_axis, scalar_axis
from onyx.ops.math._shape import check_axis
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


def cumulate(op_type, accumulate, identity, x, axis, exclusive, reverse):
    """Shared by CumSum and CumProd: ``accumulate`` is a ufunc's ``accumulate``."""
    ax = norm_axis(scalar_axis(axis, op_type), x.ndim, op_type)
    n = x.shape[ax] if x.ndim else 1
    if x.ndim == 0 or n == 0:
        return np.full_like(x, identity) if exclusive else x.copy()
    if reverse:
        x = np.flip(x, ax)
    if exclusive:
        out = np.empty_like(x)
        head = [slice(None)] * x.ndim
        head[ax] = slice(0, 1)
        out[tuple(head)] = identity
        body = list(head)
        body[ax] = slice(1, None)
        src = list(head)
        src[ax] = slice(0, n - 1)
        accumulate(x[tuple(src)], axis=ax, dtype=x.dtype, out=out[tuple(body)])
    else:
        out = accumulate(x, axis=ax, dtype=x.dtype)
    if reverse:
        out = np.flip(out, ax)
    return out


@op("CumSum", since=11)
def cum_sum_11(x, axis, *, exclusive=0, reverse=0):
    return cumulate("CumSum", np.add.accumulate, 0, x, axis, exclusive, reverse)


def cumulate_rule(ctx: ShapeContext) -> None:
    """CumSum and CumProd: the input's type and shape; a known axis is checked against the rank."""
    axis = ctx.input_ints(1)
    if axis is not None:
        if len(axis) != 1:
            ctx.fail(f"axis must be one integer, got {len(axis)} values")
        if isinstance(axis[0], int):
            check_axis(ctx, axis[0], ctx.input_rank(0), ctx.node.op_type)
    ctx.same_as_input(0)


shape_rule("CumSum")(cumulate_rule)
