"""Momentum (ai.onnx.preview.training): one SGD-with-momentum step (standard or Nesterov)."""

from __future__ import annotations

from onyx.errors import InvalidArgument
from onyx.ops.registry import PREVIEW_TRAINING_DOMAIN, op, shape_rule
from onyx.ops.training._common import groups, optimizer_shape_rule, scalar


@op("Momentum", domain=PREVIEW_TRAINING_DOMAIN, since=1)
def momentum(R, T, *inputs, alpha, beta, mode, norm_coefficient):
    if mode not in ("standard", "nesterov"):
        raise InvalidArgument(f"Momentum: mode must be 'standard' or 'nesterov', got {mode!r}")
    xs, gs, vs = groups(inputs, 3, "Momentum")
    r = scalar(R, "Momentum: R")
    beta_adj = beta if scalar(T, "Momentum: T") > 0 else 1.0
    x_new, v_new = [], []
    for x, g, v in zip(xs, gs, vs):
        c = x.dtype.type
        g_reg = g + c(norm_coefficient) * x if norm_coefficient else g
        v2 = c(alpha) * v + c(beta_adj) * g_reg
        step = g_reg + c(alpha) * v2 if mode == "nesterov" else v2
        x_new.append((x - c(r) * step).astype(x.dtype, copy=False))
        v_new.append(v2.astype(v.dtype, copy=False))
    return tuple(x_new + v_new)


shape_rule("Momentum", domain=PREVIEW_TRAINING_DOMAIN)(optimizer_shape_rule(3, 2))
