"""Sin: elementwise sine."""

import numpy as np

from onyx.ops.registry import op


@op("Sin", since=7)
def sin_7(x):
    return np.sin(x, out=...)
