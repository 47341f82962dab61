"""MaxUnpool (all versions): scatter values to their MaxPool indices in a zero tensor."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import as_ints, check_rank
from onyx.ops.nn._shapes import max_unpool_rule
from onyx.ops.registry import op, shape_rule


def _run(X, I, output_shape, kernel_shape, pads, strides):
    check_rank(X, 3, "MaxUnpool X")
    nd = X.ndim - 2
    kernel = as_ints(kernel_shape, nd, 1, "kernel_shape")
    strides = as_ints(strides, nd, 1, "strides")
    pads = as_ints(pads, 2 * nd, 0, "pads")
    if I.shape != X.shape:
        raise InvalidArgument(f"MaxUnpool: indices of shape {I.shape} must match X of shape {X.shape}")
    default = X.shape[:2] + tuple(
        (X.shape[2 + i] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + nd] for i in range(nd)
    )
    shape = default
    if output_shape is not None and np.size(output_shape) > 0:
        shape = tuple(int(v) for v in np.asarray(output_shape).ravel())
        if len(shape) != X.ndim:
            raise InvalidArgument(f"MaxUnpool: output_shape {shape} must have rank {X.ndim}")
    idx = I.ravel().astype(np.int64)
    dtotal = int(np.prod(default))
    if idx.size and (idx.min() < 0 or idx.max() >= dtotal):
        raise InvalidArgument(f"MaxUnpool: indices out of range for the unpooled shape {default}")
    if shape != default:
        # indices address the unpooled shape MaxPool saw; keep the coordinates in the requested shape
        coords = np.unravel_index(idx, default)
        if any((c >= s).any() for c, s in zip(coords, shape)):
            raise InvalidArgument(f"MaxUnpool: output_shape {shape} too small for indices of shape {default}")
        idx = np.ravel_multi_index(coords, shape)
    total = int(np.prod(shape))
    y = np.zeros(total, dtype=X.dtype)
    y[idx] = X.ravel()
    return y.reshape(shape)


@op("MaxUnpool", since=9)
def max_unpool(X, I, output_shape=None, *, kernel_shape, pads=None, strides=None):
    return _run(X, I, output_shape, kernel_shape, pads, strides)


shape_rule("MaxUnpool")(max_unpool_rule)
