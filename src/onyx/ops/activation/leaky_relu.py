"""LeakyRelu: x for x >= 0, alpha * x otherwise."""

import numpy as np

from onyx.ops.activation._common import alpha_op


def _leaky(x, alpha):
    # alpha <= 1: max(x, alpha * x) picks x for x >= 0 and alpha * x below; alpha > 1: min does
    if alpha == 0.0:  # a Relu; also keeps +inf (inf * 0 would be NaN)
        return np.maximum(x, 0, out=...)
    y = np.multiply(x, alpha, out=...)
    if alpha <= 1.0:
        return np.maximum(x, y, out=y)
    return np.minimum(x, y, out=y)


leaky_relu_kernel = alpha_op("LeakyRelu", _leaky, alpha=0.01)
