"""ReduceLogSumExp: log(sum(exp(x))), computed stably over ``axes``;
the axes move from an attribute to an optional input
(with ``noop_with_empty_axes``) at opset 18."""

from __future__ import annotations

from onyx.ops.reduce._common import reduce
from onyx.ops.reduce._shapes import reduce_shape_rule
from onyx.ops.registry import op, shape_rule


@op("ReduceLogSumExp", since=1, until=18)
def reduce_log_sum_exp_1(data, *, axes=None, keepdims=1):
    return reduce("log_sum_exp", data, axes, keepdims, 0, "ReduceLogSumExp")


@op("ReduceLogSumExp", since=18)
def reduce_log_sum_exp_18(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return reduce("log_sum_exp", data, axes, keepdims, noop_with_empty_axes, "ReduceLogSumExp")


shape_rule("ReduceLogSumExp")(reduce_shape_rule)
