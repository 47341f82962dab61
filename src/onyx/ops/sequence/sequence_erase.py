"""SequenceErase: a new sequence without the tensor at ``position`` (default: the last one)."""

from __future__ import annotations

from onyx.ops.registry import op, shape_rule
from onyx.ops.sequence._common import as_sequence, elem_tensor, normalize, position, set_sequence


@op("SequenceErase", since=11)
def sequence_erase(input_sequence, position_=None):
    seq = as_sequence(input_sequence, "SequenceErase")
    pos = -1 if position_ is None else position(position_, "SequenceErase")
    k = normalize(pos, len(seq), "SequenceErase")
    return seq[:k] + seq[k + 1 :]


@shape_rule("SequenceErase")
def _sequence_erase_shape(ctx) -> None:
    """The input sequence's type."""
    elem, dims = elem_tensor(ctx, 0)
    set_sequence(ctx, 0, elem, dims)
