"""Xor: elementwise logical xor of bool tensors, with broadcasting.

Opset 1 uses the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._common import broadcast_error, legacy_broadcast
from onyx.ops.math._shape import legacy_compare_rule
from onyx.ops.registry import op, shape_rule


@op("Xor", since=1, until=7)
def xor_1(a, b, *, axis=None, broadcast=0):
    return xor_7(a, legacy_broadcast("Xor", a, b, broadcast, axis))


@op("Xor", since=7)
def xor_7(a, b):
    try:
        return np.logical_xor(a, b, out=...)
    except ValueError:
        raise broadcast_error("Xor", a, b) from None


shape_rule("Xor")(legacy_compare_rule)
