"""GreaterOrEqual: elementwise a >= b, bool output, with numpy-style broadcasting."""

import numpy as np

from onyx.ops.math._common import broadcast_error
from onyx.ops.math._shape import compare_rule
from onyx.ops.registry import op, shape_rule


@op("GreaterOrEqual", since=12)
def greater_or_equal_12(a, b):
    try:
        return np.greater_equal(a, b, out=...)
    except ValueError:
        raise broadcast_error("GreaterOrEqual", a, b) from None


shape_rule("GreaterOrEqual")(compare_rule)
