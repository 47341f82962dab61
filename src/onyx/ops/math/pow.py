"""Pow: elementwise power with broadcasting; base and exponent may have different types (opset 12+).

The output has the base's type. Integer bases wrap on overflow as C does; a negative integer exponent
is computed through float64 and truncated (as ``(T)pow((double)x, (double)y)``).
"""

import numpy as np

from onyx.ops.math._common import broadcast_error, legacy_broadcast
from onyx.ops.registry import op


def _int_pow(x, y):
    dt = x.dtype
    if y.dtype.kind == "f" or y.dtype.kind == "V" or (y.dtype.kind == "i" and (y < 0).any()):
        with np.errstate(all="ignore"):
            r = np.power(x.astype(np.float64), y.astype(np.float64))
            return np.asarray(r).astype(dt)
    if dt == np.uint64:
        return np.power(x, y.astype(np.uint64), out=...)
    # powers modulo 2**64 reduce to powers modulo 2**bits: wraps exactly like C
    return np.power(x.astype(np.int64), y.astype(np.int64), out=...).astype(dt)


def _pow(x, y):
    if x.dtype == y.dtype and x.dtype.kind != "i" and x.dtype.kind != "u":
        return np.power(x, y, out=...)
    if x.dtype.kind in "iu":
        return _int_pow(x, y)
    return np.power(x, y.astype(x.dtype), out=...)


@op("Pow", since=1, until=7)
def pow_1(x, y, *, axis=None, broadcast=0):
    return pow_7(x, legacy_broadcast("Pow", x, y, broadcast, axis))


@op("Pow", since=7)
def pow_7(x, y):
    try:
        return _pow(x, y)
    except ValueError:
        raise broadcast_error("Pow", x, y) from None
