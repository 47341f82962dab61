"""Softsign: x / (1 + |x|)."""

import numpy as np

from onyx.ops.activation._common import float_unary_op


def _softsign(x):
    d = np.abs(x, out=...)
    d += 1
    return np.divide(x, d, out=d)


softsign_kernel = float_unary_op("Softsign", _softsign, since=1)
