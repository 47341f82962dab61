"""Mod: elementwise remainder with broadcasting.

``fmod=0``: ``a - floor(a / b) * b`` (sign of the divisor, Python's ``%``); ``fmod=1``: C's ``fmod``
(sign of the dividend). Integer division by zero gives 0 instead of trapping.
"""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.math._common import broadcast_error
from onyx.ops.math._shape import elementwise_rule
from onyx.ops.registry import op, shape_rule


@op("Mod", since=10)
def mod_10(a, b, *, fmod=0):
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            if fmod == 0:
                return np.remainder(a, b, out=...)
            if fmod == 1:
                return np.fmod(a, b, out=...)
    except ValueError:
        raise broadcast_error("Mod", a, b) from None
    raise InvalidArgument(f"Mod: attribute fmod must be 0 or 1, got {fmod}")


shape_rule("Mod")(elementwise_rule)
