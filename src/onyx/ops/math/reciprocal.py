"""Reciprocal: elementwise 1/x."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Reciprocal", since=1, until=6)
def reciprocal_1(x, *, consumed_inputs=None):
    return np.reciprocal(x, out=...)


@op("Reciprocal", since=6)
def reciprocal_6(x):
    return np.reciprocal(x, out=...)


shape_rule("Reciprocal")(same_shape_rule)
