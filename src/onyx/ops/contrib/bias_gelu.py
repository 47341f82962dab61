"""com.microsoft BiasGelu: Gelu (erf form) of A + B, B a bias broadcast over the last axis."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._common import back, gelu_erf, rule_like_input0, to_compute
from onyx.ops.registry import op, shape_rule


@op("BiasGelu", domain="com.microsoft", since=1)
def bias_gelu(A, B):  # noqa: N803
    try:
        s = np.add(to_compute(A), to_compute(B))
    except ValueError:
        raise InvalidArgument(f"BiasGelu: bias {B.shape} does not broadcast to the input {A.shape}") from None
    return back(gelu_erf(s), A.dtype)


@shape_rule("BiasGelu", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx)
