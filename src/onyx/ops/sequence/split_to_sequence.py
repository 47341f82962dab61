"""SplitToSequence: split a tensor along an axis into a sequence of tensors."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op


@op("SplitToSequence", since=11)
def split_to_sequence(input, split=None, *, axis=0, keepdims=1):
    # Version 24 only adds bfloat16: same kernel.
    x = np.asarray(input)
    r = x.ndim
    if not -r <= axis < r:
        raise InvalidArgument(f"SplitToSequence: axis {axis} is out of range for input shape {x.shape}")
    axis = axis + r if axis < 0 else axis
    dim = x.shape[axis]
    if split is None:
        parts = np.split(x, dim, axis=axis) if dim else []
        if not keepdims:
            return [np.squeeze(p, axis=axis) for p in parts]
        return parts
    s = np.asarray(split)
    if s.dtype.kind not in "iu" or s.ndim > 1:
        raise InvalidArgument(
            f"SplitToSequence: split must be an int scalar or 1-D tensor, got {s.dtype} shape {s.shape}"
        )
    if s.ndim == 0:
        size = int(s)
        if size <= 0:
            raise InvalidArgument(f"SplitToSequence: split must be positive, got {size}")
        bounds = list(range(size, dim, size))
    else:
        sizes = s.astype(np.int64)
        if (sizes < 0).any() or int(sizes.sum()) != dim:
            raise InvalidArgument(
                f"SplitToSequence: split {sizes.tolist()} must be non-negative and sum to {dim} "
                f"(axis {axis} of shape {x.shape})"
            )
        bounds = np.cumsum(sizes)[:-1].tolist()
    return np.split(x, bounds, axis=axis)
