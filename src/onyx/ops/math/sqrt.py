"""Sqrt: elementwise square root."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Sqrt", since=1, until=6)
def sqrt_1(x, *, consumed_inputs=None):
    return np.sqrt(x, out=...)


@op("Sqrt", since=6)
def sqrt_6(x):
    return np.sqrt(x, out=...)


shape_rule("Sqrt")(same_shape_rule)
