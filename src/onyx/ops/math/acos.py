"""Acos: elementwise arc cosine."""

import numpy as np

from onyx.ops.registry import op


@op("Acos", since=7)
def acos_7(x):
    return np.arccos(x, out=...)
