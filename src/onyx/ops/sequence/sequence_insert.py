"""SequenceInsert: a new sequence with ``tensor`` inserted at ``position`` (default: at the end)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.sequence._common import as_sequence, elem_tensor, normalize, position, set_sequence, union_dims


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


@shape_rule("SequenceInsert")
def _sequence_insert_shape(ctx) -> None:
    """The sequence's type, widened to cover the inserted tensor."""
    elem, dims = elem_tensor(ctx, 0)
    t_elem, t_dims = ctx.input_elem(1), ctx.input_shape(1)
    if elem is not None and t_elem is not None and elem != t_elem:
        ctx.fail(f"tensor has element type {t_elem}, the sequence holds {elem}")
    set_sequence(ctx, 0, elem if elem is not None else t_elem, union_dims(dims, t_dims))
