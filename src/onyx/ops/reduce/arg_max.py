"""ArgMax: the int64 index of the largest entry along ``axis``
(the first one, or the last with ``select_last_index`` from opset 12)."""

from __future__ import annotations

from onyx.ops.reduce._arg import arg_reduce
from onyx.ops.reduce._shapes import arg_shape_rule
from onyx.ops.registry import op, shape_rule


@op("ArgMax", since=1, until=12)
def arg_max_1(data, *, axis=0, keepdims=1):
    return arg_reduce("argmax", data, axis, keepdims, 0)


@op("ArgMax", since=12)
def arg_max_12(data, *, axis=0, keepdims=1, select_last_index=0):
    return arg_reduce("argmax", data, axis, keepdims, select_last_index)


shape_rule("ArgMax")(arg_shape_rule)
