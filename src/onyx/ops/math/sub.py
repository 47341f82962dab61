"""Sub: elementwise difference with broadcasting (integers wrap as in C).

Opsets 1-6 use the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._common import broadcast_error, legacy_broadcast
from onyx.ops.math._shape import legacy_elementwise_rule
from onyx.ops.registry import op, shape_rule


@op("Sub", since=1, until=6)
def sub_1(a, b, *, axis=None, broadcast=0, consumed_inputs=None):
    return sub_7(a, legacy_broadcast("Sub", a, b, broadcast, axis))


@op("Sub", since=6, until=7)
def sub_6(a, b, *, axis=None, broadcast=0):
    return sub_7(a, legacy_broadcast("Sub", a, b, broadcast, axis))


@op("Sub", since=7)
def sub_7(a, b):
    try:
        return np.subtract(a, b, out=...)
    except ValueError:
        raise broadcast_error("Sub", a, b) from None


shape_rule("Sub")(legacy_elementwise_rule)
