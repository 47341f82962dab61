"""Asinh: elementwise inverse hyperbolic sine."""

import numpy as np

from onyx.ops.registry import op


@op("Asinh", since=9)
def asinh_9(x):
    return np.arcsinh(x, out=...)
