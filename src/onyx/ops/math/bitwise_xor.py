"""BitwiseXor: elementwise bitwise xor of integer tensors, with numpy-style broadcasting."""

import numpy as np

from onyx.ops.math._common import broadcast_error
from onyx.ops.math._shape import elementwise_rule
from onyx.ops.registry import op, shape_rule


@op("BitwiseXor", since=18)
def bitwise_xor_18(a, b):
    try:
        return np.bitwise_xor(a, b, out=...)
    except ValueError:
        raise broadcast_error("BitwiseXor", a, b) from None


shape_rule("BitwiseXor")(elementwise_rule)
