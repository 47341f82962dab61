"""com.microsoft FastGelu: the tanh approximation of Gelu of X (+ bias)."""

from onyx.kernels import activation
from onyx.ops.contrib._common import expect_bias_of, rule_like_input0, threads_of
from onyx.ops.registry import op, shape_rule


@op("FastGelu", domain="com.microsoft", since=1)
def fast_gelu(X, bias=None, *, _ctx=None):  # noqa: N803
    expect_bias_of(X, bias, "FastGelu")
    return activation.gelu_tanh(X, bias, threads=threads_of(_ctx))


@shape_rule("FastGelu", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx)
