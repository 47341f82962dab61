"""Max: elementwise maximum of one or more tensors with numpy-style broadcasting (opset 8 on; opsets 1-6,
which wanted equal shapes, are served by the same rule)."""

import numpy as np

from onyx.ops.math._binary import variadic_op

max_kernel = variadic_op("Max", np.maximum)
