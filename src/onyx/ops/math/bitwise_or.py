"""BitwiseOr: elementwise bitwise or of integer tensors, with numpy-style broadcasting."""

import numpy as np

from onyx.ops.math._common import broadcast_error
from onyx.ops.math._shape import elementwise_rule
from onyx.ops.registry import op, shape_rule


@op("BitwiseOr", since=18)
def bitwise_or_18(a, b):
    try:
        return np.bitwise_or(a, b, out=...)
    except ValueError:
        raise broadcast_error("BitwiseOr", a, b) from None


shape_rule("BitwiseOr")(elementwise_rule)
