"""Gather: take entries along an axis at the given (possibly negative) indices."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.tensor._common import check_index_dtype, norm_axis


@op("Gather", since=1)
def gather_1(data, indices, *, axis=0):
    x = np.asarray(data)
    if x.ndim == 0:
        raise InvalidArgument("Gather: data must have rank >= 1, got a scalar")
    ax = norm_axis(axis, x.ndim)
    idx = check_index_dtype(indices)
    n = x.shape[ax]
    if idx.ndim == 0:
        i = int(idx)
        if not -n <= i < n:
            raise InvalidArgument(
                f"Gather: index {i} out of range for axis {ax} of size {n} (shape {x.shape})"
            )
        return x[(slice(None),) * ax + (i, Ellipsis)]  # a view (0-d array, never a numpy scalar)
    try:
        return np.take(x, idx, axis=ax)
    except IndexError:
        lo, hi = int(idx.min()), int(idx.max())
        raise InvalidArgument(
            f"Gather: indices in [{lo}, {hi}] out of range for axis {ax} of size {n} (shape {x.shape})"
        ) from None
