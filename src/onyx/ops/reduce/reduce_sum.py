"""ReduceSum: the sum over ``axes``;
the axes move from an attribute to an optional input
(with ``noop_with_empty_axes``) at opset 13."""

from __future__ import annotations

from onyx.ops.reduce._common import reduce
from onyx.ops.reduce._shapes import reduce_shape_rule
from onyx.ops.registry import op, shape_rule


@op("ReduceSum", since=1, until=13)
def reduce_sum_1(data, *, axes=None, keepdims=1):
    return reduce("sum", data, axes, keepdims, 0, "ReduceSum")


@op("ReduceSum", since=13)
def reduce_sum_13(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return reduce("sum", data, axes, keepdims, noop_with_empty_axes, "ReduceSum")


shape_rule("ReduceSum")(reduce_shape_rule)
