"""CausalConvWithState (opset 27): causal depthwise 1-D convolution with a carried state, optional SiLU."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._shapes import causal_conv_rule
from onyx.ops.registry import op, shape_rule


@op("CausalConvWithState", since=27)
def causal_conv_with_state(input, weight, bias=None, past_state=None, *, activation="none"):
    act = activation.decode() if isinstance(activation, bytes) else activation
    if act not in ("none", "silu", "swish"):
        raise InvalidArgument(f"CausalConvWithState: activation {activation!r} must be none, silu or swish")
    if input.ndim != 3 or weight.ndim != 3 or weight.shape[:2] != (input.shape[1], 1):
        raise InvalidArgument(
            f"CausalConvWithState: input {input.shape} must be (B, C, L) and weight {weight.shape} (C, 1, k)"
        )
    b, c, length = input.shape
    k = weight.shape[2]
    ct = compute_dtype(input.dtype)
    x = input.astype(ct, copy=False)
    if past_state is not None:
        if past_state.shape != (b, c, k - 1):
            raise InvalidArgument(
                f"CausalConvWithState: past_state {past_state.shape}, expected {(b, c, k - 1)}"
            )
        full = np.concatenate([past_state.astype(ct, copy=False), x], axis=2)
    else:
        full = np.concatenate([np.zeros((b, c, k - 1), dtype=ct), x], axis=2)
    w = weight.astype(ct, copy=False)[:, 0, :]
    y = full[:, :, 0:length] * w[:, 0:1]
    tmp = np.empty_like(y)
    for j in range(1, k):
        np.multiply(full[:, :, j : j + length], w[:, j : j + 1], out=tmp)
        y += tmp
    if bias is not None:
        y += bias.astype(ct, copy=False)[:, None]
    if act != "none":
        y = y / (1 + np.exp(-y))
    present = full[:, :, full.shape[2] - (k - 1) :]
    return back(y, input.dtype), back(np.ascontiguousarray(present), input.dtype)


shape_rule("CausalConvWithState")(causal_conv_rule)
