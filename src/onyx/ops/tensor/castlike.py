"""CastLike: Cast to the element type of a second tensor (all versions)."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor.cast import cast_array
from onyx.shape_inference import ShapeContext


@op("CastLike", since=15, until=19)
def castlike_15(input, target_type):
    return cast_array(input, np.asarray(target_type).dtype)


@op("CastLike", since=19, until=24)
def castlike_19(input, target_type, *, saturate=1):
    return cast_array(input, np.asarray(target_type).dtype, saturate)


@op("CastLike", since=24)
def castlike_24(input, target_type, *, saturate=1, round_mode="up"):
    return cast_array(input, np.asarray(target_type).dtype, saturate, round_mode)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("CastLike")
def _castlike_shape(ctx: ShapeContext) -> None:
    ctx.set_output(0, ctx.input_elem(1), ctx.input_shape(0))
