"""ReduceL1: the sum of absolute values over ``axes``;
the axes move from an attribute to an optional input
(with ``noop_with_empty_axes``) at opset 18."""

from __future__ import annotations

from onyx.ops.reduce._common import reduce
from onyx.ops.reduce._shapes import reduce_shape_rule
from onyx.ops.registry import op, shape_rule


@op("ReduceL1", since=1, until=18)
def reduce_l1_1(data, *, axes=None, keepdims=1):
    return reduce("l1", data, axes, keepdims, 0, "ReduceL1")


@op("ReduceL1", since=18)
def reduce_l1_18(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return reduce("l1", data, axes, keepdims, noop_with_empty_axes, "ReduceL1")


shape_rule("ReduceL1")(reduce_shape_rule)
