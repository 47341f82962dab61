"""BitwiseAnd: elementwise bitwise and of integer tensors, with numpy-style broadcasting."""

import numpy as np

from onyx.ops.math._common import broadcast_error
from onyx.ops.math._shape import elementwise_rule
from onyx.ops.registry import op, shape_rule


@op("BitwiseAnd", since=18)
def bitwise_and_18(a, b):
    try:
        return np.bitwise_and(a, b, out=...)
    except ValueError:
        raise broadcast_error("BitwiseAnd", a, b) from None


shape_rule("BitwiseAnd")(elementwise_rule)
