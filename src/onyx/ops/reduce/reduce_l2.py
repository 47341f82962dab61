"""ReduceL2: the square root of the sum of squares over ``axes``;
the axes move from an attribute to an optional input
(with ``noop_with_empty_axes``) at opset 18."""

from __future__ import annotations

from onyx.ops.reduce._common import reduce
from onyx.ops.reduce._shapes import reduce_shape_rule
from onyx.ops.registry import op, shape_rule


@op("ReduceL2", since=1, until=18)
def reduce_l2_1(data, *, axes=None, keepdims=1):
    return reduce("l2", data, axes, keepdims, 0, "ReduceL2")


@op("ReduceL2", since=18)
def reduce_l2_18(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return reduce("l2", data, axes, keepdims, noop_with_empty_axes, "ReduceL2")


shape_rule("ReduceL2")(reduce_shape_rule)
