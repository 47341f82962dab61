"""Unsqueeze: insert size-1 dimensions at ``axes`` of the output
(an attribute before opset 13, an input from 13)."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import int_list, norm_axes
from onyx.shape_inference import ShapeContext


def unsqueeze(x, axes: list[int]) -> np.ndarray:
    x = np.asarray(x)
    r = x.ndim + len(axes)
    ax = set(norm_axes(axes, r, "Unsqueeze: axes"))
    it = iter(x.shape)
    return x.reshape([1 if i in ax else next(it) for i in range(r)])


@op("Unsqueeze", since=1, until=13)
def unsqueeze_1(data, *, axes):
    return unsqueeze(data, list(axes))


@op("Unsqueeze", since=13)
def unsqueeze_13(data, axes):
    return unsqueeze(data, int_list(axes, "Unsqueeze: axes"))


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Unsqueeze")
def _unsqueeze_shape(ctx: ShapeContext) -> None:
    elem = ctx.input_elem(0)
    src = ctx.input_shape(0)
    _, axes = S.axes_arg(ctx, 1)
    if axes is None:
        n = S.vector_length(ctx, 1)
        ctx.set_output(0, elem, None if src is None or n is None else S.fresh(ctx, len(src) + n))
        return
    plain = S.plain_ints(axes)
    if src is None or plain is None:
        ctx.set_output(0, elem, None if src is None else S.fresh(ctx, len(src) + len(axes)))
        return
    r = len(src) + len(plain)
    ax = set(S.norm_axes(ctx, plain, r, "Unsqueeze: axes"))
    it = iter(src)
    ctx.set_output(0, elem, [1 if i in ax else next(it) for i in range(r)])
