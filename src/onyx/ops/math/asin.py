"""Asin: elementwise arc sine."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Asin", since=7)
def asin_7(x):
    return np.arcsin(x, out=...)


shape_rule("Asin")(same_shape_rule)
