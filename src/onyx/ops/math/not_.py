"""Not: elementwise logical not of a bool tensor."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Not", since=1)
def not_1(x):
    return np.logical_not(x, out=...)


shape_rule("Not")(same_shape_rule)
