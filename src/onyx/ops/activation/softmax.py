"""Softmax: exp(x) / sum(exp(x)) along an axis, computed after subtracting the maximum.

Opsets 1-12 coerce the input to 2-D around ``axis`` (default 1); opset 13 works per axis (default -1).
"""

from onyx.ops.activation._softmax import axis_rule, run, softmax
from onyx.ops.registry import op, shape_rule


@op("Softmax", since=1, until=13)
def softmax_1(x, *, axis=1):
    return run("Softmax", softmax, x, axis, True)


@op("Softmax", since=13)
def softmax_13(x, *, axis=-1):
    return run("Softmax", softmax, x, axis, False)


shape_rule("Softmax")(axis_rule)
