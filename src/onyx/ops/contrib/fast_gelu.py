"""com.microsoft FastGelu: the tanh approximation of Gelu of X (+ bias)."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops import _native
from onyx.ops.contrib._common import back, gelu_tanh, rule_like_input0, to_compute
from onyx.ops.math._erf import JIT_MIN, map_rows_jit
from onyx.ops.registry import op, shape_rule


@op("FastGelu", domain="com.microsoft", since=1)
def fast_gelu(X, bias=None):  # noqa: N803
    x = to_compute(X)
    if (
        x.dtype == np.float32
        and x.size >= JIT_MIN
        and (bias is None or (bias.dtype == np.float32 and bias.size == x.shape[-1]))
        and _native.available()
    ):
        return back(map_rows_jit("_gelu_tanh32_task", x, bias), X.dtype)
    if bias is not None:
        try:
            x = np.add(x, to_compute(bias))
        except ValueError:
            raise InvalidArgument(f"FastGelu: bias {bias.shape} does not broadcast to {X.shape}") from None
    return back(gelu_tanh(x), X.dtype)


@shape_rule("FastGelu", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx)
