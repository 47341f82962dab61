"""And: elementwise logical and of bool tensors, with broadcasting.

Opset 1 uses the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._common import broadcast_error, legacy_broadcast
from onyx.ops.math._shape import legacy_compare_rule
from onyx.ops.registry import op, shape_rule


@op("And", since=1, until=7)
def and_1(a, b, *, axis=None, broadcast=0):
    return and_7(a, legacy_broadcast("And", a, b, broadcast, axis))


@op("And", since=7)
def and_7(a, b):
    try:
        return np.logical_and(a, b, out=...)
    except ValueError:
        raise broadcast_error("And", a, b) from None


shape_rule("And")(legacy_compare_rule)
