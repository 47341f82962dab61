"""HardSwish: x * max(0, min(1, x / 6 + 1 / 2))."""

from onyx.ops.activation._common import float_kernel
from onyx.ops.activation.hard_sigmoid import hard_sigmoid
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


def _hard_swish(x):
    t = hard_sigmoid(x, 1.0 / 6.0, 0.5)
    t *= x
    return t


_run = float_kernel(_hard_swish)


@op("HardSwish", since=14)
def hard_swish_14(x):
    return _run(x)


shape_rule("HardSwish")(same_shape_rule)
