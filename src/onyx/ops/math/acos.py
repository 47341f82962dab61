"""Acos: elementwise arc cosine."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Acos", since=7)
def acos_7(x):
    return np.arccos(x, out=...)


shape_rule("Acos")(same_shape_rule)
