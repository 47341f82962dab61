"""com.microsoft BiasAdd: X + bias + skip."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._common import back, rule_like_input0, to_compute
from onyx.ops.registry import op, shape_rule


@op("BiasAdd", domain="com.microsoft", since=1)
def bias_add(X, bias, skip):  # noqa: N803
    try:
        y = np.add(to_compute(X), to_compute(bias))
        y += to_compute(skip)
    except ValueError:
        raise InvalidArgument(
            f"BiasAdd: X {X.shape}, bias {bias.shape} and skip {skip.shape} do not fit"
        ) from None
    return back(y, X.dtype)


@shape_rule("BiasAdd", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx)
