"""Atan: elementwise arc tangent."""

import numpy as np

from onyx.ops.registry import op


@op("Atan", since=7)
def atan_7(x):
    return np.arctan(x, out=...)
