"""Elu: x for x > 0, alpha * (exp(x) - 1) otherwise."""

import numpy as np

from onyx.ops.activation._common import alpha_op


def _elu(x, alpha):
    neg = np.minimum(x, 0, out=...)
    np.expm1(neg, out=neg)
    neg *= alpha
    neg += np.maximum(x, 0)
    return neg


elu_kernel = alpha_op("Elu", _elu, alpha=1.0)
