"""Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.activation._common import float_kernel
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


def _celu(x, alpha):
    neg = np.minimum(x, 0, out=...)
    neg *= 1.0 / alpha
    np.expm1(neg, out=neg)
    neg *= alpha
    neg += np.maximum(x, 0)
    return neg


_run = float_kernel(_celu)


@op("Celu", since=12)
def celu_12(x, *, alpha=1.0):
    if alpha == 0:
        raise InvalidArgument("Celu: alpha must not be 0")
    return _run(x, alpha)


shape_rule("Celu")(same_shape_rule)
