"""SequenceLength: the number of tensors in a sequence, as an int64 scalar."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.ops.sequence._common import as_sequence, elem_tensor


@op("SequenceLength", since=11)
def sequence_length(input_sequence):
    return np.array(len(as_sequence(input_sequence, "SequenceLength")), dtype=np.int64)


@shape_rule("SequenceLength")
def _sequence_length_shape(ctx) -> None:
    """An int64 scalar."""
    elem_tensor(ctx, 0)
    ctx.set_output(0, 7, [])
