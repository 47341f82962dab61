"""com.microsoft Inverse: the inverse of every matrix of a [..., M, M] batch (torch.inverse as exported
with onnxruntime's contrib opset). float16 is inverted in float32."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._common import rule_like_input0
from onyx.ops.registry import op, shape_rule


@op("Inverse", domain="com.microsoft", since=1)
def inverse(X):  # noqa: N803
    x = np.asarray(X)
    if x.dtype not in (np.float16, np.float32, np.float64):
        raise InvalidArgument(f"Inverse: input must be float16, float or double, got {x.dtype}")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise InvalidArgument(f"Inverse: input must be [..., M, M], got shape {x.shape}")
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    try:
        y = np.linalg.inv(work)
    except np.linalg.LinAlgError as e:
        raise InvalidArgument(f"Inverse: a matrix of the input {x.shape} is not invertible ({e})") from None
    return y.astype(x.dtype, copy=False)


@shape_rule("Inverse", domain="com.microsoft")
def _shape(ctx) -> None:
    rule_like_input0(ctx)
