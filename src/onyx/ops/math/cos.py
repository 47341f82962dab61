"""Cos: elementwise cosine."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Cos", since=7)
def cos_7(x):
    return np.cos(x, out=...)


shape_rule("Cos")(same_shape_rule)
