"""Mean: elementwise mean of one or more tensors, with numpy-style broadcasting."""

import numpy as np

from onyx.ops.math._common import variadic
from onyx.ops.math._shape import elementwise_rule
from onyx.ops.registry import op, shape_rule


def mean_n(xs):
    out = variadic("Mean", np.add, xs)
    if len(xs) > 1:
        np.true_divide(out, len(xs), out=out)
    return out


@op("Mean", since=1, until=6)
def mean_1(*data_0, consumed_inputs=None):
    return mean_n(data_0)


@op("Mean", since=6)
def mean_6(*data_0):
    return mean_n(data_0)


shape_rule("Mean")(elementwise_rule)
