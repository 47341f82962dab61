"""And: elementwise logical and of bool tensors, with broadcasting.

Opset 1 uses the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._binary import LEGACY_V1, binary_op

and_kernel = binary_op("And", np.logical_and, legacy=LEGACY_V1, bool_output=True)
