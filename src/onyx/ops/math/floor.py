"""Floor: elementwise floor."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Floor", since=1, until=6)
def floor_1(x, *, consumed_inputs=None):
    return np.floor(x, out=...)


@op("Floor", since=6)
def floor_6(x):
    return np.floor(x, out=...)


shape_rule("Floor")(same_shape_rule)
