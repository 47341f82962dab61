"""ArgMax: the int64 index of the largest entry along ``axis``
(the first one, or the last with ``select_last_index`` from opset 12)."""

from onyx.ops.reduce._arg import arg_op

arg_max_kernel = arg_op("ArgMax", "argmax")
