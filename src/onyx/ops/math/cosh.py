"""Cosh: elementwise hyperbolic cosine."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Cosh", since=9)
def cosh_9(x):
    return np.cosh(x, out=...)


shape_rule("Cosh")(same_shape_rule)
