"""Or: elementwise logical or of bool tensors, with broadcasting.

Opset 1 uses the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._common import broadcast_error, legacy_broadcast
from onyx.ops.math._shape import legacy_compare_rule
from onyx.ops.registry import op, shape_rule


@op("Or", since=1, until=7)
def or_1(a, b, *, axis=None, broadcast=0):
    return or_7(a, legacy_broadcast("Or", a, b, broadcast, axis))


@op("Or", since=7)
def or_7(a, b):
    try:
        return np.logical_or(a, b, out=...)
    except ValueError:
        raise broadcast_error("Or", a, b) from None


shape_rule("Or")(legacy_compare_rule)
