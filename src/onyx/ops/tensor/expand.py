"""Expand: broadcast a tensor to a shape (numpy broadcasting rules; the result may be larger)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import int_list
from onyx.shape_inference import ShapeContext


@op("Expand", since=8)
def expand_8(input, shape):
    x = np.asarray(input)
    target = int_list(shape, "Expand: shape")
    try:
        out_shape = np.broadcast_shapes(x.shape, tuple(target))
    except ValueError:
        raise InvalidArgument(f"Expand: input shape {x.shape} cannot broadcast to {target}") from None
    if out_shape == x.shape:
        return x
    # A read-only broadcast view: no copy. Kernels never write into their inputs.
    return np.broadcast_to(x, out_shape)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Expand")
def _expand_shape(ctx: ShapeContext) -> None:
    elem = ctx.input_elem(0)
    src = ctx.input_shape(0)
    target = S.int_values(ctx, 1)
    if target is not None:
        if src is None:
            # each output dim is max(input dim, target dim): only target dims > 1 are certain
            ctx.set_output(0, elem, None)
            return
        ctx.set_output(0, elem, expand_dims(ctx, src, target))
        return
    n = S.vector_length(ctx, 1)
    if n is None or src is None:
        ctx.set_output(0, elem, None)
        return
    rank = max(n, len(src))
    out: list = S.fresh(ctx, rank)
    for k, d in enumerate(src):
        if S.is_int(d) and d != 1:
            out[rank - len(src) + k] = d  # the target's dim must be 1 or d
    ctx.set_output(0, elem, out)


def expand_dims(ctx: ShapeContext, src: list, target: list) -> list:
    """Broadcast ``src`` to ``target`` (numpy rules): a target dim of 1 keeps the input's dim."""
    rank = max(len(src), len(target))
    a = [1] * (rank - len(src)) + list(src)
    b = [1] * (rank - len(target)) + list(target)
    out: list = []
    for axis, (x, y) in enumerate(zip(a, b)):
        if S.is_int(y) and y == 1:
            out.append(x)
        elif S.is_int(x) and x == 1:
            out.append(y)
        elif S.is_int(x) and S.is_int(y):
            if x != y:
                ctx.fail(f"Expand: input shape {src} cannot broadcast to {target} (axis {axis})")
            out.append(x)
        elif S.is_int(x):
            out.append(x)  # the symbolic target dim must be 1 or x
        elif S.is_int(y):
            out.append(y)  # the symbolic input dim must be 1 or y
        elif x is not None and x == y:
            out.append(x)
        else:
            out.append(None)
    return out
