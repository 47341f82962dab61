"""Adagrad (ai.onnx.preview.training): one ADAGRAD step for one or more tensors."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import PREVIEW_TRAINING_DOMAIN, op, shape_rule
from onyx.ops.training._common import groups, optimizer_shape_rule, scalar


@op("Adagrad", domain=PREVIEW_TRAINING_DOMAIN, since=1)
def adagrad(R, T, *inputs, decay_factor=0.0, epsilon=1e-6, norm_coefficient=0.0):
    xs, gs, hs = groups(inputs, 3, "Adagrad")
    r = scalar(R, "Adagrad: R") / (1.0 + scalar(T, "Adagrad: T") * decay_factor)
    x_new, h_new = [], []
    for x, g, h in zip(xs, gs, hs):
        dt = x.dtype
        g_reg = g + dt.type(norm_coefficient) * x if norm_coefficient else g
        h2 = h + g_reg * g_reg
        x_new.append((x - dt.type(r) * g_reg / (np.sqrt(h2) + dt.type(epsilon))).astype(dt, copy=False))
        h_new.append(h2.astype(h.dtype, copy=False))
    return tuple(x_new + h_new)


shape_rule("Adagrad", domain=PREVIEW_TRAINING_DOMAIN)(optimizer_shape_rule(3, 2))
