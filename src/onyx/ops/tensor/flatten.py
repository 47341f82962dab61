"""Flatten: reshape to 2-D, dims before ``axis`` into the first, the rest into the second."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.shape_inference import ShapeContext


@op("Flatten", since=1)
def flatten_1(input, *, axis=1):
    x = np.asarray(input)
    r = x.ndim
    a = int(axis)
    if not -r <= a <= r:
        raise InvalidArgument(f"Flatten: axis {a} out of range [-{r}, {r}] for shape {x.shape}")
    if a < 0:
        a += r
    return x.reshape(math.prod(x.shape[:a]), math.prod(x.shape[a:]))


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Flatten")
def _flatten_shape(ctx: ShapeContext) -> None:
    s = ctx.input_shape(0)
    if s is None:
        ctx.set_output(0, ctx.input_elem(0), [None, None])
        return
    r = len(s)
    a = int(ctx.attr("axis", 1))
    if not -r <= a <= r:
        ctx.fail(f"Flatten: axis {a} out of range [-{r}, {r}] for rank {r}")
    if a < 0:
        a += r
    ctx.set_output(0, ctx.input_elem(0), [S.prod(s[:a]), S.prod(s[a:])])
