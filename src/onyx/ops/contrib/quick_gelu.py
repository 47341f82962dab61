"""com.microsoft QuickGelu: x * sigmoid(alpha * x)."""

import numpy as np

from onyx.ops.contrib._common import back, sigmoid_, to_compute
from onyx.ops.registry import op


@op("QuickGelu", domain="com.microsoft", since=1)
def quick_gelu(X, *, alpha=1.702):  # noqa: N803
    x = to_compute(X)
    y = np.multiply(x, x.dtype.type(alpha))
    sigmoid_(y)
    y *= x
    return back(y, X.dtype)
