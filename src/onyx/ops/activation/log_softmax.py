"""LogSoftmax: log of Softmax, x - max - log(sum(exp(x - max))).

Opsets 1-12 coerce the input to 2-D around ``axis`` (default 1); opset 13 works per axis (default -1).
"""

from onyx.ops.activation._softmax import axis_op, log_softmax

log_softmax_kernel = axis_op("LogSoftmax", log_softmax)
