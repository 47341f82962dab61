"""Greater: elementwise a > b, bool output, with broadcasting.

Opset 1 uses the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._common import broadcast_error, legacy_broadcast
from onyx.ops.math._shape import legacy_compare_rule
from onyx.ops.registry import op, shape_rule


@op("Greater", since=1, until=7)
def greater_1(a, b, *, axis=None, broadcast=0):
    return greater_7(a, legacy_broadcast("Greater", a, b, broadcast, axis))


@op("Greater", since=7)
def greater_7(a, b):
    try:
        return np.greater(a, b, out=...)
    except ValueError:
        raise broadcast_error("Greater", a, b) from None


shape_rule("Greater")(legacy_compare_rule)
