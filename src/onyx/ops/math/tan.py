"""Tan: elementwise tangent."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Tan", since=7)
def tan_7(x):
    return np.tan(x, out=...)


shape_rule("Tan")(same_shape_rule)
