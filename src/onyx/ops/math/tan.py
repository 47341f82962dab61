"""Tan: elementwise tangent."""

import numpy as np

from onyx.ops.registry import op


@op("Tan", since=7)
def tan_7(x):
    return np.tan(x, out=...)
