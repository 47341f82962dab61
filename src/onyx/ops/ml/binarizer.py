"""Binarizer: 1 where X > threshold, else 0, in X's element type."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op


@op("Binarizer", domain="ai.onnx.ml", since=1)
def binarizer_1(X, *, threshold=0.0):
    X = np.asarray(X)
    return (X > threshold).astype(X.dtype)
