"""SplitToSequence: split a tensor along an axis into a sequence of tensors."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.sequence._common import set_sequence


@op("SplitToSequence", since=11)
def split_to_sequence(input, split=None, *, axis=0, keepdims=1):
    # Version 24 only adds bfloat16: same kernel.
    x = np.asarray(input)
    r = x.ndim
    if not -r <= axis < r:
        raise InvalidArgument(f"SplitToSequence: axis {axis} is out of range for input shape {x.shape}")
    axis = axis + r if axis < 0 else axis
    dim = x.shape[axis]
    if split is None:
        parts = np.split(x, dim, axis=axis) if dim else []
        if not keepdims:
            return [np.squeeze(p, axis=axis) for p in parts]
        return parts
    s = np.asarray(split)
    if s.dtype.kind not in "iu" or s.ndim > 1:
        raise InvalidArgument(
            f"SplitToSequence: split must be an int scalar or 1-D tensor, got {s.dtype} shape {s.shape}"
        )
    if s.ndim == 0:
        size = int(s)
        if size <= 0:
            raise InvalidArgument(f"SplitToSequence: split must be positive, got {size}")
        bounds = list(range(size, dim, size))
    else:
        sizes = s.astype(np.int64)
        if (sizes < 0).any() or int(sizes.sum()) != dim:
            raise InvalidArgument(
                f"SplitToSequence: split {sizes.tolist()} must be non-negative and sum to {dim} "
                f"(axis {axis} of shape {x.shape})"
            )
        bounds = np.cumsum(sizes)[:-1].tolist()
    return np.split(x, bounds, axis=axis)


@shape_rule("SplitToSequence")
def _split_to_sequence_shape(ctx) -> None:
    """A sequence of pieces of the input: without split, pieces of 1 on the axis (dropped with
    keepdims=0); a scalar split s gives s where it divides the dim (else unknown: the last piece
    is shorter); a 1-D split gives its size when all sizes are equal."""
    x, elem = ctx.input_shape(0), ctx.input_elem(0)
    if x is None:
        set_sequence(ctx, 0, elem, None)
        return
    r = len(x)
    axis = int(ctx.attr("axis", 0))
    if not -r <= axis < r:
        ctx.fail(f"axis {axis} is out of range for input shape {x}")
    axis = axis + r if axis < 0 else axis
    dims = list(x)
    if not ctx.has_input(1):
        if int(ctx.attr("keepdims", 1)):
            dims[axis] = 1
        else:
            del dims[axis]
    else:
        split = ctx.input_value(1)
        rank = ctx.input_rank(1)
        piece = None
        if split is not None and np.asarray(split).dtype != object:
            s = np.asarray(split)
            if s.ndim == 0:
                size = int(s)
                if size <= 0:
                    ctx.fail(f"split must be positive, got {size}")
                d = x[axis]
                piece = size if isinstance(d, int) and d % size == 0 else None
            elif s.size and (s == s.reshape(-1)[0]).all():
                piece = int(s.reshape(-1)[0])
            if s.ndim == 1 and isinstance(x[axis], int) and int(s.sum()) != x[axis]:
                ctx.fail(f"split sizes {s.tolist()} do not add up to dim {x[axis]} of axis {axis}")
        elif rank is not None and rank > 1:
            ctx.fail(f"split must be a scalar or 1-D, got rank {rank}")
        dims[axis] = piece
    set_sequence(ctx, 0, elem, dims)
