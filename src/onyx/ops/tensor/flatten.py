"""Flatten: reshape to 2-D, dims before ``axis`` into the first, the rest into the second."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op


@op("Flatten", since=1)
def flatten_1(input, *, axis=1):
    x = np.asarray(input)
    r = x.ndim
    a = int(axis)
    if not -r <= a <= r:
        raise InvalidArgument(f"Flatten: axis {a} out of range [-{r}, {r}] for shape {x.shape}")
    if a < 0:
        a += r
    return x.reshape(math.prod(x.shape[:a]), math.prod(x.shape[a:]))
