"""GreaterOrEqual: elementwise a >= b, bool output, with numpy-style broadcasting."""

import numpy as np

from onyx.ops.math._binary import binary_op

greater_or_equal_kernel = binary_op("GreaterOrEqual", np.greater_equal, since=12, bool_output=True)
