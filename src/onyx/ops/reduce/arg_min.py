"""ArgMin: the int64 index of the smallest entry along ``axis``
(the first one, or the last with ``select_last_index`` from opset 12)."""

from onyx.ops.reduce._arg import arg_op

arg_min_kernel = arg_op("ArgMin", "argmin")
