"""Abs: elementwise absolute value."""

import numpy as np

from onyx.ops.registry import op


@op("Abs", since=1)
def abs_(x):
    return np.abs(x)
