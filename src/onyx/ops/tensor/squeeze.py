"""Squeeze: drop size-1 dimensions (``axes`` attribute before opset 13, optional input from 13)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import int_list, norm_axes
from onyx.shape_inference import ShapeContext


def squeeze(x, axes: list[int] | None) -> np.ndarray:
    x = np.asarray(x)
    if not axes:  # absent or empty: every size-1 dimension
        return x.reshape([d for d in x.shape if d != 1])
    ax = norm_axes(axes, x.ndim, "Squeeze: axes")
    for a in ax:
        if x.shape[a] != 1:
            raise InvalidArgument(f"Squeeze: axis {a} of input shape {x.shape} is not of size 1")
    return x.reshape([d for i, d in enumerate(x.shape) if i not in ax])


@op("Squeeze", since=1, until=13)
def squeeze_1(data, *, axes=None):
    return squeeze(data, None if axes is None else list(axes))


@op("Squeeze", since=13)
def squeeze_13(data, axes=None):
    return squeeze(data, None if axes is None else int_list(axes, "Squeeze: axes"))


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Squeeze")
def _squeeze_shape(ctx: ShapeContext) -> None:
    elem = ctx.input_elem(0)
    src = ctx.input_shape(0)
    given, axes = S.axes_arg(ctx, 1)
    if given and axes is None:
        n = S.vector_length(ctx, 1)
        rank = None if src is None or n is None else len(src) - n
        ctx.set_output(0, elem, None if rank is None else S.fresh(ctx, rank))
        return
    if src is None:
        ctx.set_output(0, elem, None)
        return
    if not axes:  # every size-1 dim: only known when every dim is known to be 1 or not
        if any(not S.is_int(d) for d in src):
            ctx.set_output(0, elem, None)
            return
        ctx.set_output(0, elem, [d for d in src if d != 1])
        return
    plain = S.plain_ints(axes)
    if plain is None:
        ctx.set_output(0, elem, S.fresh(ctx, len(src) - len(axes)))
        return
    ax = S.norm_axes(ctx, plain, len(src), "Squeeze: axes")
    for a in ax:
        if S.is_int(src[a]) and src[a] != 1:
            ctx.fail(f"Squeeze: axis {a} of input shape {src} is not of size 1")
    ctx.set_output(0, elem, [d for i, d in enumerate(src) if i not in ax])
