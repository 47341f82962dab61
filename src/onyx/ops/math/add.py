"""Add: elementwise sum with broadcasting (integers wrap as in C).

Opsets 1-6 use the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._common import broadcast_error, legacy_broadcast
from onyx.ops.math._shape import legacy_elementwise_rule
from onyx.ops.registry import op, shape_rule


@op("Add", since=1, until=6)
def add_1(a, b, *, axis=None, broadcast=0, consumed_inputs=None):
    return add_7(a, legacy_broadcast("Add", a, b, broadcast, axis))


@op("Add", since=6, until=7)
def add_6(a, b, *, axis=None, broadcast=0):
    return add_7(a, legacy_broadcast("Add", a, b, broadcast, axis))


@op("Add", since=7)
def add_7(a, b):
    try:
        return np.add(a, b, out=...)
    except ValueError:
        raise broadcast_error("Add", a, b) from None


shape_rule("Add")(legacy_elementwise_rule)
