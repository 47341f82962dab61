"""Hardmax: 1 at the first maximum along an axis, 0 elsewhere.

Opsets 1-12 coerce the input to 2-D around ``axis`` (default 1); opset 13 works per axis (default -1).
"""

from onyx.ops.activation._softmax import axis_rule, hardmax, run
from onyx.ops.registry import op, shape_rule


@op("Hardmax", since=1, until=13)
def hardmax_1(x, *, axis=1):
    return run("Hardmax", hardmax, x, axis, True)


@op("Hardmax", since=13)
def hardmax_13(x, *, axis=-1):
    return run("Hardmax", hardmax, x, axis, False)


shape_rule("Hardmax")(axis_rule)
