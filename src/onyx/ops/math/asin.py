"""Asin: elementwise arc sine."""

import numpy as np

from onyx.ops.registry import op


@op("Asin", since=7)
def asin_7(x):
    return np.arcsin(x, out=...)
