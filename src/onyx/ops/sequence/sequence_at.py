"""SequenceAt: the tensor at a (possibly negative) position of a sequence."""

from __future__ import annotations

from onyx.ops.registry import op
from onyx.ops.sequence._common import as_sequence, normalize, position


@op("SequenceAt", since=11)
def sequence_at(input_sequence, position_):
    seq = as_sequence(input_sequence, "SequenceAt")
    return seq[normalize(position(position_, "SequenceAt"), len(seq), "SequenceAt")]
