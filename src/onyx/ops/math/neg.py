"""Neg: elementwise negation (integers wrap as in C)."""

import numpy as np

from onyx.ops.registry import op


@op("Neg", since=1, until=6)
def neg_1(x, *, consumed_inputs=None):
    return np.negative(x, out=...)


@op("Neg", since=6)
def neg_6(x):
    return np.negative(x, out=...)
