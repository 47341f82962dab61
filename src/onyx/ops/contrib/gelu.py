"""com.microsoft Gelu: 0.5 * x * (1 + erf(x / sqrt 2))."""

from onyx.ops.contrib._common import back, rule_like_input0, to_compute
from onyx.ops.math._erf import gelu as gelu_of
from onyx.ops.registry import op, shape_rule


@op("Gelu", domain="com.microsoft", since=1)
def gelu(X):  # noqa: N803
    return back(gelu_of(to_compute(X)), X.dtype)


@shape_rule("Gelu", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx)
