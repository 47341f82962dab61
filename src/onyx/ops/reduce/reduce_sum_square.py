"""ReduceSumSquare: the sum of squares over ``axes``;
the axes move from an attribute to an optional input
(with ``noop_with_empty_axes``) at opset 18."""

from __future__ import annotations

from onyx.ops.reduce._common import reduce
from onyx.ops.reduce._shapes import reduce_shape_rule
from onyx.ops.registry import op, shape_rule


@op("ReduceSumSquare", since=1, until=18)
def reduce_sum_square_1(data, *, axes=None, keepdims=1):
    return reduce("sum_square", data, axes, keepdims, 0, "ReduceSumSquare")


@op("ReduceSumSquare", since=18)
def reduce_sum_square_18(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return reduce("sum_square", data, axes, keepdims, noop_with_empty_axes, "ReduceSumSquare")


shape_rule("ReduceSumSquare")(reduce_shape_rule)
