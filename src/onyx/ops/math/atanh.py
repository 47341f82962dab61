"""Atanh: elementwise inverse hyperbolic tangent."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Atanh", since=9)
def atanh_9(x):
    return np.arctanh(x, out=...)


shape_rule("Atanh")(same_shape_rule)
