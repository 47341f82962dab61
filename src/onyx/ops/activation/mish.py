"""Mish: x * tanh(softplus(x))."""

import numpy as np

from onyx.ops.activation._common import float_unary_op


def _mish(x):
    t = np.logaddexp(x, 0, out=...)
    np.tanh(t, out=t)
    t *= x
    return t


mish_kernel = float_unary_op("Mish", _mish, since=18)
