"""ReduceMean: the mean over ``axes``;
the axes move from an attribute to an optional input
(with ``noop_with_empty_axes``) at opset 18."""

from __future__ import annotations

from onyx.ops.reduce._common import reduce
from onyx.ops.reduce._shapes import reduce_shape_rule
from onyx.ops.registry import op, shape_rule


@op("ReduceMean", since=1, until=18)
def reduce_mean_1(data, *, axes=None, keepdims=1):
    return reduce("mean", data, axes, keepdims, 0, "ReduceMean")


@op("ReduceMean", since=18)
def reduce_mean_18(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return reduce("mean", data, axes, keepdims, noop_with_empty_axes, "ReduceMean")


shape_rule("ReduceMean")(reduce_shape_rule)
