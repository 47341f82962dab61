"""Softmax: exp(x) / sum(exp(x)) along an axis, computed after subtracting the maximum.

Opsets 1-12 coerce the input to 2-D around ``axis`` (default 1); opset 13 works per axis (default -1).
"""

from onyx.ops.activation._softmax import axis_op, softmax

softmax_kernel = axis_op("Softmax", softmax)
