"""SequenceAt: the tensor at a (possibly negative) position of a sequence."""

from __future__ import annotations

from onyx.ops.registry import op, shape_rule
from onyx.ops.sequence._common import as_sequence, elem_tensor, normalize, position


@op("SequenceAt", since=11)
def sequence_at(input_sequence, position_):
    seq = as_sequence(input_sequence, "SequenceAt")
    return seq[normalize(position(position_, "SequenceAt"), len(seq), "SequenceAt")]


@shape_rule("SequenceAt")
def _sequence_at_shape(ctx) -> None:
    """A tensor of the sequence's element type and shape."""
    elem, dims = elem_tensor(ctx, 0)
    ctx.set_output(0, elem, dims)
