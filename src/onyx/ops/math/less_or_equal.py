"""LessOrEqual: elementwise a <= b, bool output, with numpy-style broadcasting."""

import numpy as np

from onyx.ops.math._binary import binary_op

less_or_equal_kernel = binary_op("LessOrEqual", np.less_equal, since=12, bool_output=True)
