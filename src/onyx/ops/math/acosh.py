"""Acosh: elementwise inverse hyperbolic cosine."""

import numpy as np

from onyx.ops.registry import op


@op("Acosh", since=9)
def acosh_9(x):
    return np.arccosh(x, out=...)
