"""Greater: elementwise a > b, bool output, with broadcasting.

Opset 1 uses the legacy ``broadcast``/``axis`` rule; opset 7 on, numpy-style broadcasting.
"""

import numpy as np

from onyx.ops.math._binary import LEGACY_V1, binary_op

greater_kernel = binary_op("Greater", np.greater, legacy=LEGACY_V1, bool_output=True)
