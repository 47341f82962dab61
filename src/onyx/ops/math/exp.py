"""Exp: elementwise e**x."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Exp", since=1, until=6)
def exp_1(x, *, consumed_inputs=None):
    return np.exp(x, out=...)


@op("Exp", since=6)
def exp_6(x):
    return np.exp(x, out=...)


shape_rule("Exp")(same_shape_rule)
