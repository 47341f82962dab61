"""com.microsoft GatedAdd, plain mode: X + Y * gate with a per-row gate of shape (..., 1), the product
rounded to the input's type before the add (as separate Mul and Add would). The projected mode
(``gate_weight``) is a CUDA-only bfloat16 path in onnxruntime and is refused here too."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ops.contrib._common import rule_like_input0
from onyx.ops.registry import op, shape_rule


@op("GatedAdd", domain="com.microsoft", since=1)
def gated_add(X, Y, gate, gate_weight=None):  # noqa: N803
    if gate_weight is not None:
        raise OnyxNotImplemented("GatedAdd: the projected mode (gate_weight) is CUDA-only in onnxruntime")
    x, y, g = np.asarray(X), np.asarray(Y), np.asarray(gate)
    if y.shape != x.shape:
        raise InvalidArgument(f"GatedAdd: X {x.shape} and Y {y.shape} must have the same shape")
    if x.ndim == 0 or g.shape != x.shape[:-1] + (1,):
        raise InvalidArgument(f"GatedAdd: gate must have shape {x.shape[:-1] + (1,)}, got {g.shape}")
    return x + (y * g).astype(x.dtype)


@shape_rule("GatedAdd", domain="com.microsoft")
def _shape(ctx) -> None:
    rule_like_input0(ctx)
