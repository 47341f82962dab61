"""Mish: x * tanh(softplus(x))."""

import numpy as np

from onyx.ops.activation._common import float_kernel
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


def _mish(x):
    t = np.logaddexp(x, 0, out=...)
    np.tanh(t, out=t)
    t *= x
    return t


_run = float_kernel(_mish)


@op("Mish", since=18)
def mish_18(x):
    return _run(x)


shape_rule("Mish")(same_shape_rule)
