"""LogSoftmax: log of Softmax, x - max - log(sum(exp(x - max))).

Opsets 1-12 coerce the input to 2-D around ``axis`` (default 1); opset 13 works per axis (default -1).
"""

from onyx.ops.activation._softmax import axis_rule, log_softmax, run
from onyx.ops.registry import op, shape_rule


@op("LogSoftmax", since=1, until=13)
def log_softmax_1(x, *, axis=1):
    return run("LogSoftmax", log_softmax, x, axis, True)


@op("LogSoftmax", since=13)
def log_softmax_13(x, *, axis=-1):
    return run("LogSoftmax", log_softmax, x, axis, False)


shape_rule("LogSoftmax")(axis_rule)
