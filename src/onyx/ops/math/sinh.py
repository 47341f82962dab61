"""Sinh: elementwise hyperbolic sine."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Sinh", since=9)
def sinh_9(x):
    return np.sinh(x, out=...)


shape_rule("Sinh")(same_shape_rule)
