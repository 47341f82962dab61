"""com.microsoft SampleOp: onnxruntime's sample kernel, an echo (the output is the input)."""

from __future__ import annotations

import numpy as np

from onyx.ops.contrib._common import rule_like_input0
from onyx.ops.registry import op, shape_rule


@op("SampleOp", domain="com.microsoft", since=1)
def sample_op(X):  # noqa: N803
    return np.array(X, copy=True)


@shape_rule("SampleOp", domain="com.microsoft")
def _shape(ctx) -> None:
    rule_like_input0(ctx)
