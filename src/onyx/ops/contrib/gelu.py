"""com.microsoft Gelu: 0.5 * x * (1 + erf(x / sqrt 2))."""

from onyx.kernels import activation
from onyx.ops.contrib._common import rule_like_input0, threads_of
from onyx.ops.registry import op, shape_rule


@op("Gelu", domain="com.microsoft", since=1)
def gelu(X, *, _ctx=None):  # noqa: N803
    return activation.gelu(X, threads=threads_of(_ctx))


@shape_rule("Gelu", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx)
