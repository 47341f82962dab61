"""Log: elementwise natural logarithm."""

import numpy as np

from onyx.ops.registry import op


@op("Log", since=1, until=6)
def log_1(x, *, consumed_inputs=None):
    return np.log(x, out=...)


@op("Log", since=6)
def log_6(x):
    return np.log(x, out=...)
