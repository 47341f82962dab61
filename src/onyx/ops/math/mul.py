"""Mul: elementwise product with broadcasting (integers wrap as in C).

Opsets 1-6 use the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._binary import LEGACY_V1_V6, binary_op

mul_kernel = binary_op("Mul", np.multiply, legacy=LEGACY_V1_V6)
