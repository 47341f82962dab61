"""Acosh: elementwise inverse hyperbolic cosine."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Acosh", since=9)
def acosh_9(x):
    return np.arccosh(x, out=...)


shape_rule("Acosh")(same_shape_rule)
