"""Relu: elementwise max(x, 0) (NaN stays NaN); integer types from opset 14."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Relu", since=1, until=6)
def relu_1(x, *, consumed_inputs=None):
    return np.maximum(x, 0, out=...)


@op("Relu", since=6)
def relu_6(x):
    return np.maximum(x, 0, out=...)


shape_rule("Relu")(same_shape_rule)
