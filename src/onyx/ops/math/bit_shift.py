"""BitShift: elementwise shift of unsigned (opset 11) or any integer (opset 28) tensors.

numpy's shifts already give what opset 28 specifies: right shifts of signed values are arithmetic,
and a shift amount that is negative or at least the bit width gives 0 (-1 for a right shift of a
negative value).
"""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.math._common import broadcast_error
from onyx.ops.math._shape import elementwise_rule
from onyx.ops.registry import op, shape_rule


@op("BitShift", since=11)
def bit_shift_11(x, y, *, direction):
    if direction == "RIGHT":
        f = np.right_shift
    elif direction == "LEFT":
        f = np.left_shift
    else:
        raise InvalidArgument(f"BitShift: direction must be 'LEFT' or 'RIGHT', got {direction!r}")
    try:
        return f(x, y, out=...)
    except ValueError:
        raise broadcast_error("BitShift", x, y) from None


shape_rule("BitShift")(elementwise_rule)
