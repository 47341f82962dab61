"""Ceil: elementwise ceiling."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Ceil", since=1, until=6)
def ceil_1(x, *, consumed_inputs=None):
    return np.ceil(x, out=...)


@op("Ceil", since=6)
def ceil_6(x):
    return np.ceil(x, out=...)


shape_rule("Ceil")(same_shape_rule)
