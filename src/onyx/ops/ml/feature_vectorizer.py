"""FeatureVectorizer: concatenate the inputs' columns (each cut or zero-padded to its dimension)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import as_2d
from onyx.ops.registry import op


@op("FeatureVectorizer", domain="ai.onnx.ml", since=1)
def feature_vectorizer_1(*X, inputdimensions=None):
    if not X:
        raise InvalidArgument("FeatureVectorizer: at least one input is required")
    dims = list(inputdimensions or [])
    if dims and len(dims) != len(X):
        raise InvalidArgument(f"FeatureVectorizer: {len(X)} inputs but {len(dims)} inputdimensions")
    mats = [as_2d(x) for x in X]
    n = mats[0].shape[0]
    if any(m.shape[0] != n for m in mats):
        raise InvalidArgument(
            f"FeatureVectorizer: inputs have different batch sizes {[m.shape for m in mats]}"
        )
    if not dims:
        dims = [m.shape[1] for m in mats]
    out = np.zeros((n, int(sum(dims))), dtype=np.float32)
    c = 0
    for m, d in zip(mats, dims):
        k = min(d, m.shape[1])
        out[:, c : c + k] = m[:, :k]
        c += d
    return out
