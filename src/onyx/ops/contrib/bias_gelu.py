"""com.microsoft BiasGelu: Gelu (erf form) of A + B, B a bias broadcast over the last axis."""

from onyx.kernels import activation
from onyx.ops.contrib._common import expect_bias_of, rule_like_input0, threads_of
from onyx.ops.registry import op, shape_rule


@op("BiasGelu", domain="com.microsoft", since=1)
def bias_gelu(A, B, *, _ctx=None):  # noqa: N803
    expect_bias_of(A, B, "BiasGelu")
    return activation.gelu(A, B, threads=threads_of(_ctx))


@shape_rule("BiasGelu", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx)
