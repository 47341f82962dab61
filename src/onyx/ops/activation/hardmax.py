"""Hardmax: 1 at the first maximum along an axis, 0 elsewhere.

Opsets 1-12 coerce the input to 2-D around ``axis`` (default 1); opset 13 works per axis (default -1).
"""

from onyx.ops.activation._softmax import axis_op, hardmax

hardmax_kernel = axis_op("Hardmax", hardmax)
