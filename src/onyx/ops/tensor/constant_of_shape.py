"""ConstantOfShape: a tensor of the given shape filled with one value (float32 0 by default)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.tensor._common import int_list


@op("ConstantOfShape", since=9)
def constant_of_shape_9(input, *, value=None):
    shape = int_list(input, "ConstantOfShape: shape")
    if any(d < 0 for d in shape):
        raise InvalidArgument(f"ConstantOfShape: shape {shape} has a negative dimension")
    if value is None:
        return np.zeros(shape, dtype=np.float32)
    v = np.asarray(value)
    if v.size != 1:
        raise InvalidArgument(f"ConstantOfShape: value must hold one element, got shape {v.shape}")
    return np.full(shape, v.reshape(-1)[0], dtype=v.dtype)
