"""ConstantOfShape: a tensor of the given shape filled with one value (float32 0 by default)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import int_list
from onyx.shape_inference import ShapeContext


@op("ConstantOfShape", since=9)
def constant_of_shape_9(input, *, value=None):
    shape = int_list(input, "ConstantOfShape: shape")
    if any(d < 0 for d in shape):
        raise InvalidArgument(f"ConstantOfShape: shape {shape} has a negative dimension")
    if value is None:
        return np.zeros(shape, dtype=np.float32)
    v = np.asarray(value)
    if v.size != 1:
        raise InvalidArgument(f"ConstantOfShape: value must hold one element, got shape {v.shape}")
    return np.full(shape, v.reshape(-1)[0], dtype=v.dtype)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("ConstantOfShape")
def _constant_of_shape_shape(ctx: ShapeContext) -> None:
    value = ctx.attr("value", None)
    elem = S.FLOAT if value is None else S.elem_of_array(value)
    dims = S.int_values(ctx, 0)
    if dims is None:
        n = S.vector_length(ctx, 0)
        ctx.set_output(0, elem, None if n is None else S.fresh(ctx, n))
        return
    if any(S.is_int(d) and d < 0 for d in dims):
        ctx.fail(f"ConstantOfShape: shape {dims} has a negative dimension")
    ctx.set_output(0, elem, dims)
