"""Softplus: log(exp(x) + 1), computed without overflow."""

import numpy as np

from onyx.ops.activation._common import float_kernel
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


def _softplus(x):
    return np.logaddexp(x, 0, out=...)


_run = float_kernel(_softplus)


@op("Softplus", since=1)
def softplus_1(x):
    return _run(x)


shape_rule("Softplus")(same_shape_rule)
