"""Swish: x * sigmoid(alpha * x)."""

import numpy as np

from onyx.ops.activation._common import float_kernel, sigmoid
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


def swish(x, alpha):
    s = sigmoid(x if alpha == 1.0 else np.multiply(x, alpha))
    s *= x
    return s


_run = float_kernel(swish)


@op("Swish", since=24)
def swish_24(x, *, alpha=1.0):
    return _run(x, alpha)


shape_rule("Swish")(same_shape_rule)
