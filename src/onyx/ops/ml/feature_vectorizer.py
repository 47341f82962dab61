"""FeatureVectorizer: concatenate the inputs' columns (each cut or zero-padded to its dimension)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import FLOAT, as_2d, features_of, rows_of
from onyx.ops.registry import op, shape_rule


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


@shape_rule("FeatureVectorizer", domain="ai.onnx.ml")
def _feature_vectorizer_shape(ctx) -> None:
    """float [N, sum(inputdimensions)] (without the attribute: the sum of the inputs' columns)."""
    dims = list(ctx.attr("inputdimensions") or [])
    present = [i for i in range(ctx.num_inputs) if ctx.has_input(i)]
    if dims and len(dims) != len(present):
        ctx.fail(f"{len(present)} inputs but {len(dims)} inputdimensions")
    width = sum(dims) if dims else None
    if not dims:
        cols = [features_of(ctx.input_shape(i)) for i in present]
        if cols and all(c is not None for c in cols):
            width = 0
            for c in cols:
                width = width + c
    rows = None
    for i in present:
        r = rows_of(ctx.input_shape(i))
        if rows is None:
            rows = r
        elif isinstance(rows, int) and isinstance(r, int) and r != rows:
            ctx.fail(f"inputs have different batch sizes {rows} and {r}")
        elif isinstance(r, int):
            rows = r
    ctx.set_output(0, FLOAT, [rows, width])
