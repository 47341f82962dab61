"""Expand: broadcast a tensor to a shape (numpy broadcasting rules; the result may be larger)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.tensor._common import int_list


@op("Expand", since=8)
def expand_8(input, shape):
    x = np.asarray(input)
    target = int_list(shape, "Expand: shape")
    try:
        out_shape = np.broadcast_shapes(x.shape, tuple(target))
    except ValueError:
        raise InvalidArgument(f"Expand: input shape {x.shape} cannot broadcast to {target}") from None
    if out_shape == x.shape:
        return x
    # A read-only broadcast view: no copy. Kernels never write into their inputs.
    return np.broadcast_to(x, out_shape)
