"""ParametricSoftplus (ONNX's experimental op, an onnxruntime contrib kernel in the default domain):
alpha * ln(1 + exp(beta * x)), computed without overflow."""

from __future__ import annotations

import numpy as np

from onyx.ops.contrib._common import rule_like_input0
from onyx.ops.registry import op, shape_rule


@op("ParametricSoftplus", since=1, until=10)  # removed from ONNX at opset 10; onnxruntime runs it below
def parametric_softplus(X, *, alpha, beta):  # noqa: N803
    x = np.asarray(X)
    y = x * x.dtype.type(beta)
    np.logaddexp(y, 0, out=y)
    y *= x.dtype.type(alpha)
    return y


@shape_rule("ParametricSoftplus")
def _shape(ctx) -> None:
    rule_like_input0(ctx)
