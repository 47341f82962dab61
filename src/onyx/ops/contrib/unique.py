"""com.microsoft Unique: the distinct values of a 1-D tensor in the order they first occur, the index of
each input value among them, and their counts (ONNX's Unique with sorted=0 and no axis)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor.unique import unique_11

INT64 = 7


@op("Unique", domain="com.microsoft", since=1)
def unique(x):
    a = np.asarray(x)
    if a.ndim != 1:
        raise InvalidArgument(f"Unique (com.microsoft): input must be 1-D, got shape {a.shape}")
    y, _, inverse, counts = unique_11(a, sorted=0)
    return y, inverse, counts


@shape_rule("Unique", domain="com.microsoft")
def _shape(ctx) -> None:
    src = ctx.input_shape(0)
    if src is not None and len(src) != 1:
        ctx.fail(f"input must be 1-D, got {src}")
    u = ctx.new_dim()
    ctx.set_output(0, ctx.input_elem(0), [u])
    if ctx.num_outputs > 1:
        ctx.set_output(1, INT64, None if src is None else list(src))
    if ctx.num_outputs > 2:
        ctx.set_output(2, INT64, [u])
