"""LeakyRelu: x for x >= 0, alpha * x otherwise."""

import numpy as np

from onyx.ops.activation._common import float_kernel
from onyx.ops.registry import op


def _leaky(x, alpha):
    if 0.0 <= alpha <= 1.0:  # then max(x, alpha * x) is the same thing, in two passes
        y = np.multiply(x, alpha, out=...)
        return np.maximum(x, y, out=y)
    return np.where(x < 0, x * alpha, x)


_run = float_kernel(_leaky)


@op("LeakyRelu", since=1, until=6)
def leaky_relu_1(x, *, alpha=0.01, consumed_inputs=None):
    return _run(x, alpha)


@op("LeakyRelu", since=6)
def leaky_relu_6(x, *, alpha=0.01):
    return _run(x, alpha)
