"""Concat: join tensors along an axis (axis defaults to 1 in opset 1, required from opset 4)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.tensor._common import norm_axis


def _concat(xs, axis: int) -> np.ndarray:
    if not xs:
        raise InvalidArgument("Concat: needs at least one input")
    arrays = [np.asarray(x) for x in xs]
    rank = arrays[0].ndim
    if rank == 0:
        raise InvalidArgument("Concat: inputs must have rank >= 1, got a scalar")
    ax = norm_axis(axis, rank)
    shapes = [a.shape for a in arrays]
    for s in shapes:
        if len(s) != rank or any(s[d] != shapes[0][d] for d in range(rank) if d != ax):
            raise InvalidArgument(f"Concat: input shapes {shapes} do not match except on axis {ax}")
    if len(arrays) == 1:
        return arrays[0]
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) > 1:
        raise InvalidArgument(f"Concat: inputs have different element types {sorted(map(str, dtypes))}")
    return np.concatenate(arrays, axis=ax)


@op("Concat", since=1, until=4)
def concat_1(*inputs, axis=1):
    return _concat(inputs, axis)


@op("Concat", since=4)
def concat_4(*inputs, axis):
    return _concat(inputs, axis)
