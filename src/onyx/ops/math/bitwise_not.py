"""BitwiseNot: elementwise bitwise complement of an integer tensor."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("BitwiseNot", since=18)
def bitwise_not_18(x):
    return np.invert(x, out=...)


shape_rule("BitwiseNot")(same_shape_rule)
