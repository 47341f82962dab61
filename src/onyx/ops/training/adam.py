"""Adam (ai.onnx.preview.training): one Adam step for one or more tensors."""

from __future__ import annotations

import math

import numpy as np

from onyx.ops.registry import PREVIEW_TRAINING_DOMAIN, op, shape_rule
from onyx.ops.training._common import groups, optimizer_shape_rule, scalar


@op("Adam", domain=PREVIEW_TRAINING_DOMAIN, since=1)
def adam(R, T, *inputs, alpha=0.9, beta=0.999, epsilon=1e-6, norm_coefficient=0.0, norm_coefficient_post=0.0):
    xs, gs, vs, hs = groups(inputs, 4, "Adam")
    r = scalar(R, "Adam: R")
    t = scalar(T, "Adam: T")
    if t > 0:
        r = r * math.sqrt(1.0 - beta**t) / (1.0 - alpha**t)
    x_new, v_new, h_new = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        c = x.dtype.type
        g_reg = g + c(norm_coefficient) * x if norm_coefficient else g
        v2 = c(alpha) * v + c(1.0 - alpha) * g_reg
        h2 = c(beta) * h + c(1.0 - beta) * (g_reg * g_reg)
        xn = x - c(r) * (v2 / (np.sqrt(h2) + c(epsilon)))
        if norm_coefficient_post:
            xn = c(1.0 - norm_coefficient_post) * xn
        x_new.append(xn.astype(x.dtype, copy=False))
        v_new.append(v2.astype(v.dtype, copy=False))
        h_new.append(h2.astype(h.dtype, copy=False))
    return tuple(x_new + v_new + h_new)


shape_rule("Adam", domain=PREVIEW_TRAINING_DOMAIN)(optimizer_shape_rule(4, 3))
