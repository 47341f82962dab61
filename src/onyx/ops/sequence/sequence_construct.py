"""SequenceConstruct: a sequence holding the input tensors, in order."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op


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
