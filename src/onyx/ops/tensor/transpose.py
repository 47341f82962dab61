"""Transpose: a view with permuted axes (reversed by default)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


@op("Transpose", since=1)
def transpose_1(data, *, perm=None):
    x = np.asarray(data)
    if perm is None:
        return x.transpose()
    p = [int(a) for a in perm]
    if sorted(p) != list(range(x.ndim)):
        raise InvalidArgument(f"Transpose: perm {p} is not a permutation of the axes of shape {x.shape}")
    return x.transpose(p)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Transpose")
def _transpose_shape(ctx: ShapeContext) -> None:
    s = ctx.input_shape(0)
    perm = ctx.attr("perm", None)
    if s is None:
        ctx.set_output(0, ctx.input_elem(0), None if perm is None else [None] * len(perm))
        return
    p = list(range(len(s)))[::-1] if perm is None else [int(a) for a in perm]
    if sorted(p) != list(range(len(s))):
        ctx.fail(f"Transpose: perm {p} is not a permutation of the axes of rank {len(s)}")
    ctx.set_output(0, ctx.input_elem(0), [s[a] for a in p])
