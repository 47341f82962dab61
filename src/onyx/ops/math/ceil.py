"""Ceil: elementwise ceiling."""

import numpy as np

from onyx.ops.registry import op


@op("Ceil", since=1, until=6)
def ceil_1(x, *, consumed_inputs=None):
    return np.ceil(x, out=...)


@op("Ceil", since=6)
def ceil_6(x):
    return np.ceil(x, out=...)
