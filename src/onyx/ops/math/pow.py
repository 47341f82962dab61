"""Pow: elementwise power with broadcasting; base and exponent may have different types (opset 12+).

The output has the base's type. Integer bases wrap on overflow as C does; a negative integer exponent
is computed through float64 and truncated (as ``(T)pow((double)x, (double)y)``).
"""

import numpy as np

from onyx.ops.math._common import F32, NATIVE_FLOATS, broadcast_error, legacy_broadcast
from onyx.ops.math._shape import legacy_elementwise_rule
from onyx.ops.registry import op, shape_rule


def _int_pow(x, y):
    dt = x.dtype
    if y.dtype.kind not in "iu":  # float exponent: (T)pow((double)x, (double)y)
        with np.errstate(all="ignore"):
            r = np.power(x.astype(np.float64), y.astype(np.float64), out=...)
            return r.astype(dt)
    neg = y < 0 if y.dtype.kind == "i" else None
    if neg is not None and neg.any():
        # x ** -n is 0 except for x = 1 (1) and x = -1 (+-1); x = 0 also gives 0 here, not a trap
        yy = np.where(neg, 0, y)
        r = _int_pow(x, yy)
        one = np.where((y & 1).astype(bool), np.where(x == 1, 1, np.where(x == -1, -1, 0)), np.abs(x) == 1)
        return np.where(neg, one.astype(dt), r)
    if dt == np.uint64:
        return np.power(x, y.astype(np.uint64), out=...)
    # powers modulo 2**64 reduce to powers modulo 2**bits: wraps exactly like C
    return np.power(x.astype(np.int64), y.astype(np.int64), out=...).astype(dt)


def _pow(x, y):
    dt = x.dtype
    if dt == y.dtype and dt.kind != "i" and dt.kind != "u":
        return np.power(x, y, out=...)
    if dt.kind in "iu":
        return _int_pow(x, y)
    if dt in NATIVE_FLOATS:
        return np.power(x, y.astype(dt), out=...)
    # float16/bfloat16 base with another exponent type: in float32, so the exponent keeps its bits
    return np.power(x.astype(F32), y.astype(F32), out=...).astype(dt)


@op("Pow", since=1, until=7)
def pow_1(x, y, *, axis=None, broadcast=0):
    return pow_7(x, legacy_broadcast("Pow", x, y, broadcast, axis))


@op("Pow", since=7)
def pow_7(x, y):
    try:
        return _pow(x, y)
    except ValueError:
        raise broadcast_error("Pow", x, y) from None


shape_rule("Pow")(legacy_elementwise_rule)
