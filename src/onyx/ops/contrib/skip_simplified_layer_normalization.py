"""com.microsoft SkipSimplifiedLayerNormalization: s = input + skip (+ bias); output = s / RMS(s)
over the last axis * gamma. Optional outputs: mean (never produced), inv_std_var and s."""

from onyx.ops.contrib._common import rule_like_input0, rule_stats, threads_of
from onyx.ops.contrib.skip_layer_normalization import skip_norm
from onyx.ops.registry import op, shape_rule


@op("SkipSimplifiedLayerNormalization", domain="com.microsoft", since=1)
def skip_simplified_layer_normalization(
    input, skip, gamma, bias=None, *, epsilon=1e-12, _num_outputs=1, _ctx=None
):  # noqa: A002
    what = "SkipSimplifiedLayerNormalization"
    return skip_norm(what, input, skip, gamma, None, bias, epsilon, _num_outputs, True, threads_of(_ctx))


@shape_rule("SkipSimplifiedLayerNormalization", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx, (0, 3))
    rule_stats(ctx, (1, 2))
