"""HardSigmoid: max(0, min(1, alpha * x + beta))."""

import numpy as np

from onyx.ops.activation._common import float_kernel
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


def hard_sigmoid(x, alpha, beta):
    t = np.multiply(x, alpha, out=...)
    t += beta
    np.minimum(t, 1, out=t)
    np.maximum(t, 0, out=t)
    return t


_run = float_kernel(hard_sigmoid)


@op("HardSigmoid", since=1, until=6)
def hard_sigmoid_1(x, *, alpha=0.2, beta=0.5, consumed_inputs=None):
    return _run(x, alpha, beta)


@op("HardSigmoid", since=6)
def hard_sigmoid_6(x, *, alpha=0.2, beta=0.5):
    return _run(x, alpha, beta)


shape_rule("HardSigmoid")(same_shape_rule)
