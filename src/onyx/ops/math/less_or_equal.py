"""LessOrEqual: elementwise a <= b, bool output, with numpy-style broadcasting."""

import numpy as np

from onyx.ops.math._common import broadcast_error
from onyx.ops.registry import op


@op("LessOrEqual", since=12)
def less_or_equal_12(a, b):
    try:
        return np.less_equal(a, b, out=...)
    except ValueError:
        raise broadcast_error("LessOrEqual", a, b) from None
