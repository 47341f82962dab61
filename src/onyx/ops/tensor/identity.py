"""Identity: the input itself (tensor, sequence or optional)."""

from __future__ import annotations

from onyx.ir.types import TensorType
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


@op("Identity", since=1)
def identity_1(input):
    if isinstance(input, list):
        return list(input)  # a new list object over the same tensors
    return input


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Identity")
def _identity_shape(ctx: ShapeContext) -> None:
    t = ctx.input_type(0)
    if t is not None and not isinstance(t, TensorType):
        ctx.set_output_type(0, t)  # a sequence, map or optional passes through
    else:
        ctx.same_as_input(0)
