"""Equal: elementwise equality, bool output (strings too), with broadcasting.

Opset 1 uses the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._common import broadcast_error, legacy_broadcast
from onyx.ops.math._shape import legacy_compare_rule
from onyx.ops.registry import op, shape_rule


@op("Equal", since=1, until=7)
def equal_1(a, b, *, axis=None, broadcast=0):
    return equal_7(a, legacy_broadcast("Equal", a, b, broadcast, axis))


@op("Equal", since=7)
def equal_7(a, b):
    try:
        return np.equal(a, b, out=...)
    except ValueError:
        raise broadcast_error("Equal", a, b) from None


shape_rule("Equal")(legacy_compare_rule)
