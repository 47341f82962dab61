"""SequenceErase: a new sequence without the tensor at ``position`` (default: the last one)."""

from __future__ import annotations

from onyx.ops.registry import op
from onyx.ops.sequence._common import as_sequence, normalize, position


@op("SequenceErase", since=11)
def sequence_erase(input_sequence, position_=None):
    seq = as_sequence(input_sequence, "SequenceErase")
    pos = -1 if position_ is None else position(position_, "SequenceErase")
    k = normalize(pos, len(seq), "SequenceErase")
    return seq[:k] + seq[k + 1 :]
