"""Sinh: elementwise hyperbolic sine."""

import numpy as np

from onyx.ops.registry import op


@op("Sinh", since=9)
def sinh_9(x):
    return np.sinh(x, out=...)
