"""ConcatFromSequence: concatenate (or, with new_axis=1, stack) the tensors of a sequence."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.sequence._common import as_sequence


@op("ConcatFromSequence", since=11)
def concat_from_sequence(input_sequence, *, axis, new_axis=0):
    seq = as_sequence(input_sequence, "ConcatFromSequence")
    if not seq:
        raise InvalidArgument("ConcatFromSequence: the input sequence is empty")
    arrays = [np.asarray(t) for t in seq]
    r = arrays[0].ndim + (1 if new_axis else 0)
    if not -r <= axis < r:
        raise InvalidArgument(
            f"ConcatFromSequence: axis {axis} is out of range [{-r}, {r - 1}] "
            f"for elements of shape {arrays[0].shape} (new_axis={new_axis})"
        )
    try:
        if new_axis:
            return np.stack(arrays, axis=axis)
        return np.concatenate(arrays, axis=axis)
    except ValueError as e:
        shapes = [a.shape for a in arrays]
        raise InvalidArgument(
            f"ConcatFromSequence: cannot join shapes {shapes} on axis {axis}: {e}"
        ) from None
