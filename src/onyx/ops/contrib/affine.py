"""Affine (ONNX's experimental op, an onnxruntime contrib kernel in the default domain): alpha * x + beta."""

from __future__ import annotations

import numpy as np

from onyx.ops.contrib._common import rule_like_input0
from onyx.ops.registry import op, shape_rule


@op("Affine", since=1, until=10)  # removed from ONNX at opset 10; onnxruntime runs it below
def affine(X, *, alpha=1.0, beta=0.0):  # noqa: N803
    x = np.asarray(X)
    y = x * x.dtype.type(alpha)
    y += x.dtype.type(beta)
    return y


@shape_rule("Affine")
def _shape(ctx) -> None:
    rule_like_input0(ctx)
