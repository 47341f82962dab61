"""Cos: elementwise cosine."""

import numpy as np

from onyx.ops.registry import op


@op("Cos", since=7)
def cos_7(x):
    return np.cos(x, out=...)
