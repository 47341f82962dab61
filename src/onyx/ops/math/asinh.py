"""Asinh: elementwise inverse hyperbolic sine."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Asinh", since=9)
def asinh_9(x):
    return np.arcsinh(x, out=...)


shape_rule("Asinh")(same_shape_rule)
