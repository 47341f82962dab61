"""SequenceConstruct: a sequence holding the input tensors, in order."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.sequence._common import set_sequence, union_dims


@op("SequenceConstruct", since=11)
def sequence_construct(*inputs):
    if not inputs:
        raise InvalidArgument("SequenceConstruct: needs at least one input")
    first = np.asarray(inputs[0]).dtype
    for i, x in enumerate(inputs):
        if np.asarray(x).dtype != first:
            raise InvalidArgument(
                f"SequenceConstruct: input {i} has element type {np.asarray(x).dtype}, input 0 has {first}"
            )
    return list(inputs)


@shape_rule("SequenceConstruct")
def _sequence_construct_shape(ctx) -> None:
    """A sequence of the inputs' element type; dims shared by every input stay, others unknown."""
    if ctx.num_inputs == 0:
        ctx.fail("needs at least one input")
    elems = {ctx.input_elem(i) for i in range(ctx.num_inputs)} - {None}
    if len(elems) > 1:
        ctx.fail(f"inputs have different element types {sorted(elems)}")
    dims = ctx.input_shape(0)
    for i in range(1, ctx.num_inputs):
        dims = union_dims(dims, ctx.input_shape(i))
    set_sequence(ctx, 0, elems.pop() if elems else None, dims)
