"""Tanh: elementwise hyperbolic tangent."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Tanh", since=1, until=6)
def tanh_1(x, *, consumed_inputs=None):
    return np.tanh(x, out=...)


@op("Tanh", since=6)
def tanh_6(x):
    return np.tanh(x, out=...)


shape_rule("Tanh")(same_shape_rule)
