"""BitwiseAnd: elementwise bitwise and of integer tensors, with numpy-style broadcasting."""

import numpy as np

from onyx.ops.math._binary import binary_op

bitwise_and_kernel = binary_op("BitwiseAnd", np.bitwise_and, since=18)
