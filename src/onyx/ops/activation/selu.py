"""Selu: gamma * x for x > 0, gamma * alpha * (exp(x) - 1) otherwise."""

import numpy as np

from onyx.ops.activation._common import float_kernel
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule

_ALPHA = 1.67326319217681884765625
_GAMMA = 1.05070102214813232421875


def _selu(x, alpha, gamma):
    neg = np.minimum(x, 0, out=...)
    np.expm1(neg, out=neg)
    neg *= alpha * gamma
    pos = np.maximum(x, 0)
    pos *= gamma
    neg += pos
    return neg


_run = float_kernel(_selu)


@op("Selu", since=1, until=6)
def selu_1(x, *, alpha=_ALPHA, gamma=_GAMMA, consumed_inputs=None):
    return _run(x, alpha, gamma)


@op("Selu", since=6)
def selu_6(x, *, alpha=_ALPHA, gamma=_GAMMA):
    return _run(x, alpha, gamma)


shape_rule("Selu")(same_shape_rule)
