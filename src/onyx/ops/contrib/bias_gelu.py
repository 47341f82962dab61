"""com.microsoft BiasGelu: Gelu (erf form) of A + B, B a bias broadcast over the last axis."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._common import back, rule_like_input0, to_compute
from onyx.ops.math._erf import gelu
from onyx.ops.registry import op, shape_rule


@op("BiasGelu", domain="com.microsoft", since=1)
def bias_gelu(A, B):  # noqa: N803
    a, b = to_compute(A), to_compute(B)
    try:
        if np.broadcast_shapes(a.shape, b.shape) != a.shape:
            raise ValueError
    except ValueError:
        raise InvalidArgument(f"BiasGelu: bias {B.shape} does not broadcast to the input {A.shape}") from None
    return back(gelu(a, b), A.dtype)


@shape_rule("BiasGelu", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx)
