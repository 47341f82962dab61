"""RMSNormalization: x / sqrt(mean(x^2 over axes [axis, rank)) + epsilon) * scale."""

from __future__ import annotations

import numpy as np

from onyx.ops.nn._common import back, check_unidirectional
from onyx.ops.nn._norm import norm_axis, stash_dtype
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("RMSNormalization", since=23)
def rms_normalization(X, scale, *, axis=-1, epsilon=1e-5, stash_type=1):
    ax = norm_axis(axis, max(X.ndim, 1), "RMSNormalization")
    check_unidirectional(X.shape, scale, "RMSNormalization", "scale")
    st = stash_dtype(stash_type, X.dtype)
    rows = int(np.prod(X.shape[:ax]))
    x2 = X.astype(st, copy=False).reshape(rows, -1) if X.size else X.astype(st).reshape(rows, -1)
    n = x2.shape[1]
    if x2.size == 0:
        ms = np.ones((rows, 1), st)
    elif n > 8192:
        ms = np.square(x2).mean(axis=1, keepdims=True)
    else:
        ms = np.matmul(x2[:, None, :], x2[:, :, None]).reshape(rows, 1)
        ms *= st.type(1.0 / n)
    ms += st.type(epsilon)
    np.sqrt(ms, out=ms)
    y = x2 / ms
    y = y.reshape(X.shape)
    y *= scale.astype(y.dtype, copy=False)
    return back(y, scale.dtype)


shape_rule("RMSNormalization")(same_shape_rule)
