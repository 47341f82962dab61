"""LeakyRelu: x for x >= 0, alpha * x otherwise."""

import numpy as np

from onyx.ops.activation._common import float_kernel
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


def _leaky(x, alpha):
    # alpha <= 1: max(x, alpha * x) picks x for x >= 0 and alpha * x below; alpha > 1: min does
    if alpha == 0.0:  # a Relu; also keeps +inf (inf * 0 would be NaN)
        return np.maximum(x, 0, out=...)
    y = np.multiply(x, alpha, out=...)
    if alpha <= 1.0:
        return np.maximum(x, y, out=y)
    return np.minimum(x, y, out=y)


_run = float_kernel(_leaky)


@op("LeakyRelu", since=1, until=6)
def leaky_relu_1(x, *, alpha=0.01, consumed_inputs=None):
    return _run(x, alpha)


@op("LeakyRelu", since=6)
def leaky_relu_6(x, *, alpha=0.01):
    return _run(x, alpha)


shape_rule("LeakyRelu")(same_shape_rule)
