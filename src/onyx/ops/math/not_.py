"""Not: elementwise logical not of a bool tensor."""

import numpy as np

from onyx.ops.registry import op


@op("Not", since=1)
def not_1(x):
    return np.logical_not(x, out=...)
