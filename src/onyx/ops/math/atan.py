"""Atan: elementwise arc tangent."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Atan", since=7)
def atan_7(x):
    return np.arctan(x, out=...)


shape_rule("Atan")(same_shape_rule)
