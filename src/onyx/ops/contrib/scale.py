"""Scale (ONNX's experimental op, an onnxruntime contrib kernel in the default domain): scale * x."""

from __future__ import annotations

import numpy as np

from onyx.ops.contrib._common import rule_like_input0
from onyx.ops.registry import op, shape_rule


@op("Scale", since=1, until=10)  # removed from ONNX at opset 10; onnxruntime runs it below
def scale(input, *, scale=1.0):  # noqa: A002 - the input's name
    x = np.asarray(input)
    return x * x.dtype.type(scale)


@shape_rule("Scale")
def _shape(ctx) -> None:
    rule_like_input0(ctx)
