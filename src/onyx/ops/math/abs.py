"""Abs: elementwise absolute value (integers wrap: abs(INT_MIN) == INT_MIN, as in C)."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Abs", since=1, until=6)
def abs_1(x, *, consumed_inputs=None):
    return np.abs(x, out=...)


@op("Abs", since=6)
def abs_6(x):
    return np.abs(x, out=...)


shape_rule("Abs")(same_shape_rule)
