"""Less: elementwise a < b, bool output, with broadcasting.

Opset 1 uses the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._common import broadcast_error, legacy_broadcast
from onyx.ops.math._shape import legacy_compare_rule
from onyx.ops.registry import op, shape_rule


@op("Less", since=1, until=7)
def less_1(a, b, *, axis=None, broadcast=0):
    return less_7(a, legacy_broadcast("Less", a, b, broadcast, axis))


@op("Less", since=7)
def less_7(a, b):
    try:
        return np.less(a, b, out=...)
    except ValueError:
        raise broadcast_error("Less", a, b) from None


shape_rule("Less")(legacy_compare_rule)
