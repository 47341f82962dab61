"""Sum: elementwise add of one or more tensors with numpy-style broadcasting (opset 8 on; opsets 1-6,
which wanted equal shapes, are served by the same rule)."""

import numpy as np

from onyx.ops.math._common import variadic
from onyx.ops.math._shape import elementwise_rule
from onyx.ops.registry import op, shape_rule


@op("Sum", since=1, until=6)
def sum_1(*data_0, consumed_inputs=None):
    return variadic("Sum", np.add, data_0)


@op("Sum", since=6)
def sum_6(*data_0):
    return variadic("Sum", np.add, data_0)


shape_rule("Sum")(elementwise_rule)
