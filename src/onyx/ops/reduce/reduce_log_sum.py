"""ReduceLogSum: the log of the sum over ``axes``;
the axes move from an attribute to an optional input
(with ``noop_with_empty_axes``) at opset 18."""

from __future__ import annotations

from onyx.ops.reduce._common import reduce
from onyx.ops.reduce._shapes import reduce_shape_rule
from onyx.ops.registry import op, shape_rule


@op("ReduceLogSum", since=1, until=18)
def reduce_log_sum_1(data, *, axes=None, keepdims=1):
    return reduce("log_sum", data, axes, keepdims, 0, "ReduceLogSum")


@op("ReduceLogSum", since=18)
def reduce_log_sum_18(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return reduce("log_sum", data, axes, keepdims, noop_with_empty_axes, "ReduceLogSum")


shape_rule("ReduceLogSum")(reduce_shape_rule)
