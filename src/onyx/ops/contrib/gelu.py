"""com.microsoft Gelu: 0.5 * x * (1 + erf(x / sqrt 2))."""

from onyx.ops.contrib._common import back, gelu_erf, to_compute
from onyx.ops.registry import op


@op("Gelu", domain="com.microsoft", since=1)
def gelu(X):  # noqa: N803
    return back(gelu_erf(to_compute(X)), X.dtype)
