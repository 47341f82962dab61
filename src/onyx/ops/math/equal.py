"""Equal: elementwise equality, bool output (strings too), with broadcasting.

Opset 1 uses the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._binary import LEGACY_V1, binary_op

equal_kernel = binary_op("Equal", np.equal, legacy=LEGACY_V1, bool_output=True)
