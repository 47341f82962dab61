"""com.microsoft QuickGelu: x * sigmoid(alpha * x)."""

import numpy as np

from onyx.ops.contrib._common import back, rule_like_input0, sigmoid_, to_compute
from onyx.ops.registry import op, shape_rule


@op("QuickGelu", domain="com.microsoft", since=1)
def quick_gelu(X, *, alpha=1.702):  # noqa: N803
    x = to_compute(X)
    y = np.multiply(x, x.dtype.type(alpha))
    sigmoid_(y)
    y *= x
    return back(y, X.dtype)


@shape_rule("QuickGelu", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx)
