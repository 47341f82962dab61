"""ConcatFromSequence: concatenate (or, with new_axis=1, stack) the tensors of a sequence."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.sequence._common import as_sequence, elem_tensor


@op("ConcatFromSequence", since=11)
def concat_from_sequence(input_sequence, *, axis, new_axis=0):
    seq = as_sequence(input_sequence, "ConcatFromSequence")
    if not seq:
        raise InvalidArgument("ConcatFromSequence: the input sequence is empty")
    arrays = [np.asarray(t) for t in seq]
    r = arrays[0].ndim + (1 if new_axis else 0)
    if not -r <= axis < r:
        raise InvalidArgument(
            f"ConcatFromSequence: axis {axis} is out of range [{-r}, {r - 1}] "
            f"for elements of shape {arrays[0].shape} (new_axis={new_axis})"
        )
    try:
        if new_axis:
            return np.stack(arrays, axis=axis)
        return np.concatenate(arrays, axis=axis)
    except ValueError as e:
        shapes = [a.shape for a in arrays]
        raise InvalidArgument(
            f"ConcatFromSequence: cannot join shapes {shapes} on axis {axis}: {e}"
        ) from None


@shape_rule("ConcatFromSequence")
def _concat_from_sequence_shape(ctx) -> None:
    """The elements joined on ``axis`` (stacked on a new one with new_axis=1); the joined dim
    depends on the sequence's length: a fresh symbol."""
    elem, dims = elem_tensor(ctx, 0)
    if dims is None:
        ctx.set_output(0, elem, None)
        return
    new_axis = int(ctx.attr("new_axis", 0))
    r = len(dims) + (1 if new_axis else 0)
    axis = int(ctx.attr("axis"))
    if not -r <= axis < r:
        ctx.fail(f"axis {axis} is out of range [{-r}, {r - 1}] for elements of rank {len(dims)}")
    axis = axis + r if axis < 0 else axis
    out = list(dims)
    if new_axis:
        out.insert(axis, ctx.new_dim())
    else:
        out[axis] = ctx.new_dim()
    ctx.set_output(0, elem, out)
