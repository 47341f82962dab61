"""Max: elementwise maximum of one or more tensors with numpy-style broadcasting (opset 8 on; opsets 1-6,
which wanted equal shapes, are served by the same rule)."""

import numpy as np

from onyx.ops.math._common import variadic
from onyx.ops.math._shape import elementwise_rule
from onyx.ops.registry import op, shape_rule


@op("Max", since=1, until=6)
def max_1(*data_0, consumed_inputs=None):
    return variadic("Max", np.maximum, data_0)


@op("Max", since=6)
def max_6(*data_0):
    return variadic("Max", np.maximum, data_0)


shape_rule("Max")(elementwise_rule)
