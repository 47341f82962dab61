"""Softplus: log(exp(x) + 1), computed without overflow."""

import numpy as np

from onyx.ops.activation._common import float_unary_op


def _softplus(x):
    return np.logaddexp(x, 0, out=...)


softplus_kernel = float_unary_op("Softplus", _softplus, since=1)
