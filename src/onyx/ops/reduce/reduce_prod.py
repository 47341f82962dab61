"""ReduceProd: the product over ``axes``;
the axes move from an attribute to an optional input
(with ``noop_with_empty_axes``) at opset 18."""

from __future__ import annotations

from onyx.ops.reduce._common import reduce
from onyx.ops.reduce._shapes import reduce_shape_rule
from onyx.ops.registry import op, shape_rule


@op("ReduceProd", since=1, until=18)
def reduce_prod_1(data, *, axes=None, keepdims=1):
    return reduce("prod", data, axes, keepdims, 0, "ReduceProd")


@op("ReduceProd", since=18)
def reduce_prod_18(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return reduce("prod", data, axes, keepdims, noop_with_empty_axes, "ReduceProd")


shape_rule("ReduceProd")(reduce_shape_rule)
