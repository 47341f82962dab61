"""Neg: elementwise negation (integers wrap as in C)."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Neg", since=1, until=6)
def neg_1(x, *, consumed_inputs=None):
    return np.negative(x, out=...)


@op("Neg", since=6)
def neg_6(x):
    return np.negative(x, out=...)


shape_rule("Neg")(same_shape_rule)
