"""BitwiseXor: elementwise bitwise xor of integer tensors, with numpy-style broadcasting."""

import numpy as np

from onyx.ops.math._binary import binary_op

bitwise_xor_kernel = binary_op("BitwiseXor", np.bitwise_xor, since=18)
