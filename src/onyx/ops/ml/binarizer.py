"""Binarizer: 1 where X > threshold, else 0, in X's element type."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Binarizer", domain="ai.onnx.ml", since=1)
def binarizer_1(X, *, threshold=0.0):
    X = np.asarray(X)
    return (X > threshold).astype(X.dtype)


shape_rule("Binarizer", domain="ai.onnx.ml")(same_shape_rule)
