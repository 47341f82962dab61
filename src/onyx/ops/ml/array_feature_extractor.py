"""ArrayFeatureExtractor: select elements along the last axis of X by the int64 indices Y."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op


@op("ArrayFeatureExtractor", domain="ai.onnx.ml", since=1)
def array_feature_extractor_1(X, Y):
    X = np.asarray(X)
    idx = np.asarray(Y, dtype=np.int64).reshape(-1)
    if X.ndim == 0:
        raise InvalidArgument("ArrayFeatureExtractor: X must have rank >= 1")
    n = X.shape[-1]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise InvalidArgument(
            f"ArrayFeatureExtractor: indices {idx.tolist()} out of range for last dimension {n}"
        )
    if X.ndim == 1:
        return X[idx].reshape(1, -1)
    return np.take(X, idx, axis=-1)
