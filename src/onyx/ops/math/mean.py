"""Mean: elementwise mean of one or more tensors, with numpy-style broadcasting."""

import numpy as np

from onyx.ops.math._binary import variadic_op

mean_kernel = variadic_op("Mean", np.add, divide_by_count=True)
