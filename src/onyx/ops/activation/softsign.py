"""Softsign: x / (1 + |x|)."""

import numpy as np

from onyx.ops.activation._common import float_kernel
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


def _softsign(x):
    d = np.abs(x, out=...)
    d += 1
    return np.divide(x, d, out=d)


_run = float_kernel(_softsign)


@op("Softsign", since=1)
def softsign_1(x):
    return _run(x)


shape_rule("Softsign")(same_shape_rule)
