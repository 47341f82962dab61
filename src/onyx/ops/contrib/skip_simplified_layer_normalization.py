"""com.microsoft SkipSimplifiedLayerNormalization: s = input + skip (+ bias); output = s / RMS(s)
over the last axis * gamma. Optional outputs: mean (never produced), inv_std_var and s."""

import numpy as np

from onyx.ops.contrib._common import rule_like_input0, rule_stats, standardize_last
from onyx.ops.contrib.skip_layer_normalization import compiled, finish, skip_sum
from onyx.ops.registry import op, shape_rule


@op("SkipSimplifiedLayerNormalization", domain="com.microsoft", since=1)
def skip_simplified_layer_normalization(input, skip, gamma, bias=None, *, epsilon=1e-12, _num_outputs=1):  # noqa: A002
    what = "SkipSimplifiedLayerNormalization"
    fast = compiled(what, input, skip, gamma, None, bias, epsilon, _num_outputs, True)
    if fast is not None:
        return fast
    s = skip_sum(what, input, skip, bias)
    y, _, inv = standardize_last(
        s.astype(np.float32) if s.dtype != np.float64 else s, epsilon, simplified=True
    )
    return finish(what, s, y, None, inv, gamma, None, input.dtype, _num_outputs)


@shape_rule("SkipSimplifiedLayerNormalization", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx, (0, 3))
    rule_stats(ctx, (1, 2))
