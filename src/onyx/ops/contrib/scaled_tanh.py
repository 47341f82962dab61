"""ScaledTanh (ONNX's experimental op, an onnxruntime contrib kernel in the default domain):
alpha * tanh(beta * x)."""

from __future__ import annotations

import numpy as np

from onyx.ops.contrib._common import rule_like_input0
from onyx.ops.registry import op, shape_rule


@op("ScaledTanh", since=1, until=10)  # removed from ONNX at opset 10; onnxruntime runs it below
def scaled_tanh(input, *, alpha, beta):  # noqa: A002 - the input's name
    x = np.asarray(input)
    y = x * x.dtype.type(beta)
    np.tanh(y, out=y)
    y *= x.dtype.type(alpha)
    return y


@shape_rule("ScaledTanh")
def _shape(ctx) -> None:
    rule_like_input0(ctx)
