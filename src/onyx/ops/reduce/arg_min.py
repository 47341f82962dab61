"""ArgMin: the int64 index of the smallest entry along ``axis``
(the first one, or the last with ``select_last_index`` from opset 12)."""

from __future__ import annotations

from onyx.ops.reduce._arg import arg_reduce
from onyx.ops.reduce._shapes import arg_shape_rule
from onyx.ops.registry import op, shape_rule


@op("ArgMin", since=1, until=12)
def arg_min_1(data, *, axis=0, keepdims=1):
    return arg_reduce("argmin", data, axis, keepdims, 0)


@op("ArgMin", since=12)
def arg_min_12(data, *, axis=0, keepdims=1, select_last_index=0):
    return arg_reduce("argmin", data, axis, keepdims, select_last_index)


shape_rule("ArgMin")(arg_shape_rule)
