"""Mul: elementwise product with broadcasting (integers wrap as in C).

Opsets 1-6 use the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._common import broadcast_error, legacy_broadcast
from onyx.ops.math._shape import legacy_elementwise_rule
from onyx.ops.registry import op, shape_rule


@op("Mul", since=1, until=6)
def mul_1(a, b, *, axis=None, broadcast=0, consumed_inputs=None):
    return mul_7(a, legacy_broadcast("Mul", a, b, broadcast, axis))


@op("Mul", since=6, until=7)
def mul_6(a, b, *, axis=None, broadcast=0):
    return mul_7(a, legacy_broadcast("Mul", a, b, broadcast, axis))


@op("Mul", since=7)
def mul_7(a, b):
    try:
        return np.multiply(a, b, out=...)
    except ValueError:
        raise broadcast_error("Mul", a, b) from None


shape_rule("Mul")(legacy_elementwise_rule)
