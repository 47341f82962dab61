"""Reshape: a view with a new shape; 0 copies the input dim (unless allowzero), -1 is inferred."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.tensor._common import int_list


def reshape(x, shape: list[int], allowzero: int = 0) -> np.ndarray:
    x = np.asarray(x)
    out = list(shape)
    if out.count(-1) > 1:
        raise InvalidArgument(f"Reshape: shape {shape} has more than one -1")
    if allowzero and 0 in out and -1 in out:
        raise InvalidArgument(f"Reshape: shape {shape} has both 0 and -1 while allowzero=1")
    for i, d in enumerate(out):
        if d == 0 and not allowzero:
            if i >= x.ndim:
                raise InvalidArgument(f"Reshape: shape {shape} copies dim {i} of an input of shape {x.shape}")
            out[i] = x.shape[i]
        elif d < -1:
            raise InvalidArgument(f"Reshape: shape {shape} has a negative dimension {d}")
    if -1 in out:
        i = out.index(-1)
        rest = math.prod(out[:i] + out[i + 1 :])
        if rest == 0 or x.size % rest:
            raise InvalidArgument(f"Reshape: cannot infer -1 in shape {shape} for input shape {x.shape}")
        out[i] = x.size // rest
    if math.prod(out) != x.size:
        raise InvalidArgument(f"Reshape: input shape {x.shape} ({x.size} elements) cannot become {shape}")
    return x.reshape(out)


@op("Reshape", since=1, until=5)
def reshape_1(data, *, shape=None, consumed_inputs=None):
    if shape is None:
        raise InvalidArgument("Reshape: opset-1 Reshape needs the 'shape' attribute")
    return reshape(data, list(shape))


@op("Reshape", since=5, until=14)
def reshape_5(data, shape):
    return reshape(data, int_list(shape, "Reshape: shape"))


@op("Reshape", since=14)
def reshape_14(data, shape, *, allowzero=0):
    return reshape(data, int_list(shape, "Reshape: shape"), allowzero)
