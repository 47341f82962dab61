"""SequenceInsert: a new sequence with ``tensor`` inserted at ``position`` (default: at the end)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.sequence._common import as_sequence, normalize, position


@op("SequenceInsert", since=11)
def sequence_insert(input_sequence, tensor, position_=None):
    seq = as_sequence(input_sequence, "SequenceInsert")
    if seq and np.asarray(seq[0]).dtype != np.asarray(tensor).dtype:
        raise InvalidArgument(
            f"SequenceInsert: tensor has element type {np.asarray(tensor).dtype}, "
            f"the sequence holds {np.asarray(seq[0]).dtype}"
        )
    if position_ is None:
        return seq + [tensor]
    k = normalize(position(position_, "SequenceInsert"), len(seq), "SequenceInsert", allow_end=True)
    return seq[:k] + [tensor] + seq[k:]
