"""Squeeze: drop size-1 dimensions (``axes`` attribute before opset 13, optional input from 13)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.tensor._common import int_list, norm_axes


def squeeze(x, axes: list[int] | None) -> np.ndarray:
    x = np.asarray(x)
    if not axes:  # absent or empty: every size-1 dimension
        return x.reshape([d for d in x.shape if d != 1])
    ax = norm_axes(axes, x.ndim, "Squeeze: axes")
    for a in ax:
        if x.shape[a] != 1:
            raise InvalidArgument(f"Squeeze: axis {a} of input shape {x.shape} is not of size 1")
    return x.reshape([d for i, d in enumerate(x.shape) if i not in ax])


@op("Squeeze", since=1, until=13)
def squeeze_1(data, *, axes=None):
    return squeeze(data, None if axes is None else list(axes))


@op("Squeeze", since=13)
def squeeze_13(data, axes=None):
    return squeeze(data, None if axes is None else int_list(axes, "Squeeze: axes"))
