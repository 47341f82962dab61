"""Elu: x for x > 0, alpha * (exp(x) - 1) otherwise."""

import numpy as np

from onyx.ops.activation._common import float_kernel
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


def _elu(x, alpha):
    neg = np.minimum(x, 0, out=...)
    np.expm1(neg, out=neg)
    neg *= alpha
    neg += np.maximum(x, 0)
    return neg


_run = float_kernel(_elu)


@op("Elu", since=1, until=6)
def elu_1(x, *, alpha=1.0, consumed_inputs=None):
    return _run(x, alpha)


@op("Elu", since=6)
def elu_6(x, *, alpha=1.0):
    return _run(x, alpha)


shape_rule("Elu")(same_shape_rule)
