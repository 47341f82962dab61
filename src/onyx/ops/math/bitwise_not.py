"""BitwiseNot: elementwise bitwise complement of an integer tensor."""

import numpy as np

from onyx.ops.registry import op


@op("BitwiseNot", since=18)
def bitwise_not_18(x):
    return np.invert(x, out=...)
