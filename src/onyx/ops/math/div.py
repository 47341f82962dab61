"""Div: elementwise quotient with broadcasting.

Integer division truncates toward zero as C does (numpy's ``//`` floors); division by zero gives 0
instead of trapping. Opsets 1-6 use the legacy ``broadcast``/``axis`` rule.
"""

import numpy as np

from onyx.ops.math._common import broadcast_error, legacy_broadcast
from onyx.ops.math._shape import legacy_elementwise_rule
from onyx.ops.registry import op, shape_rule


def _trunc_div(a, b):
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        r = np.fmod(a, b)  # C remainder: sign of the dividend
        return np.floor_divide(np.subtract(a, r), b, out=...)  # exact division: floor == trunc


@op("Div", since=1, until=6)
def div_1(a, b, *, axis=None, broadcast=0, consumed_inputs=None):
    return div_7(a, legacy_broadcast("Div", a, b, broadcast, axis))


@op("Div", since=6, until=7)
def div_6(a, b, *, axis=None, broadcast=0):
    return div_7(a, legacy_broadcast("Div", a, b, broadcast, axis))


@op("Div", since=7)
def div_7(a, b):
    try:
        k = a.dtype.kind
        if k == "i":
            return _trunc_div(a, b)
        if k == "u":
            with np.errstate(divide="ignore"):
                return np.floor_divide(a, b, out=...)
        return np.true_divide(a, b, out=...)
    except ValueError:
        raise broadcast_error("Div", a, b) from None


shape_rule("Div")(legacy_elementwise_rule)
