"""Div: elementwise quotient with broadcasting.

Integer division truncates toward zero as C does (numpy's ``//`` floors); division by zero gives 0
instead of trapping. Opsets 1-6 use the legacy ``broadcast``/``axis`` rule.
"""

import numpy as np

from onyx.ops.math._binary import LEGACY_V1_V6, binary_op


def _trunc_div(a, b):
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        r = np.fmod(a, b)  # C remainder: sign of the dividend
        return np.floor_divide(np.subtract(a, r), b, out=...)  # exact division: floor == trunc


def divide(a, b):
    k = a.dtype.kind
    if k == "i":
        return _trunc_div(a, b)
    if k == "u":
        with np.errstate(divide="ignore"):
            return np.floor_divide(a, b, out=...)
    return np.true_divide(a, b, out=...)


div_kernel = binary_op("Div", divide, legacy=LEGACY_V1_V6)
