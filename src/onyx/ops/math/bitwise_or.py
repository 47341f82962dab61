"""BitwiseOr: elementwise bitwise or of integer tensors, with numpy-style broadcasting."""

import numpy as np

from onyx.ops.math._binary import binary_op

bitwise_or_kernel = binary_op("BitwiseOr", np.bitwise_or, since=18)
