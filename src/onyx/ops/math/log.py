"""Log: elementwise natural logarithm."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Log", since=1, until=6)
def log_1(x, *, consumed_inputs=None):
    return np.log(x, out=...)


@op("Log", since=6)
def log_6(x):
    return np.log(x, out=...)


shape_rule("Log")(same_shape_rule)
