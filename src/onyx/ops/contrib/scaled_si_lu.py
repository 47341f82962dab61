"""com.microsoft ScaledSiLU: z * sigmoid(z) with z = scale * x (``scale``: the optional scalar input,
else the ``alpha`` attribute), each step rounded to the input's type as onnxruntime does."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._common import rule_like_input0, sigmoid_
from onyx.ops.registry import op, shape_rule


@op("ScaledSiLU", domain="com.microsoft", since=1)
def scaled_si_lu(X, scale=None, *, alpha=1.0):  # noqa: N803
    x = np.asarray(X)
    if scale is not None:
        s = np.asarray(scale)
        if s.size != 1:
            raise InvalidArgument(f"ScaledSiLU: scale must be a scalar, got shape {s.shape}")
        alpha = float(s.reshape(-1)[0])
    work = np.float32 if x.dtype != np.float64 else np.float64
    z = (x.astype(work) * work(alpha)).astype(x.dtype).astype(work)
    s = sigmoid_(z.copy()).astype(x.dtype).astype(work)
    return (z * s).astype(x.dtype)


@shape_rule("ScaledSiLU", domain="com.microsoft")
def _shape(ctx) -> None:
    rule_like_input0(ctx)
