"""HardSwish: x * max(0, min(1, x / 6 + 1 / 2))."""

from onyx.ops.activation._common import float_unary_op
from onyx.ops.activation.hard_sigmoid import hard_sigmoid


def _hard_swish(x):
    t = hard_sigmoid(x, 1.0 / 6.0, 0.5)
    t *= x
    return t


hard_swish_kernel = float_unary_op("HardSwish", _hard_swish, since=14)
