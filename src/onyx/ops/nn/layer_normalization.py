"""LayerNormalization: standardise over axes [axis, rank), then scale and shift; Mean and InvStdDev."""

from __future__ import annotations

import numpy as np

from onyx.ops.nn._common import back, check_unidirectional
from onyx.ops.nn._norm import norm_axis, norm_rows_jit, spans, standardize_rows, stash_dtype
from onyx.ops.nn._shapes import layer_norm_rule
from onyx.ops.registry import op, register, shape_rule


@op("LayerNormalization", since=17)
def layer_normalization(X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1, _num_outputs=1):
    ax = norm_axis(axis, max(X.ndim, 1), "LayerNormalization")
    check_unidirectional(X.shape, Scale, "LayerNormalization", "Scale")
    if B is not None:
        check_unidirectional(X.shape, B, "LayerNormalization", "B")
    st = stash_dtype(stash_type, X.dtype)
    lead = X.shape[:ax]
    rows = int(np.prod(lead))
    cols = int(np.prod(X.shape[ax:]))
    x2 = X.astype(st, copy=False).reshape(rows, cols)
    fast = None
    if x2.size and spans(Scale, X.shape[ax:]) and spans(B, X.shape[ax:]):
        fast = norm_rows_jit(x2, epsilon, Scale, B)
    if fast is not None:
        y, _, mean, inv = fast
        y = back(y.reshape(X.shape), X.dtype)
    else:
        if x2.size == 0:
            y = X.copy()
            mean = np.zeros((rows, 1), st)
            inv = mean.copy()
        else:
            y, mean, inv = standardize_rows(x2, epsilon)
        # the affine stage runs in the stash precision too (one rounding to X's type at the end)
        y = y.reshape(X.shape)
        y *= Scale.astype(y.dtype, copy=False)
        if B is not None:
            y += B.astype(y.dtype, copy=False)
        y = back(y, X.dtype)
    if _num_outputs == 1:
        return y
    stat_shape = lead + (1,) * (X.ndim - ax)
    u = np.float32 if stash_type != 16 else stash_dtype(16, X.dtype)
    outs = (y, mean.reshape(stat_shape).astype(u, copy=False), inv.reshape(stat_shape).astype(u, copy=False))
    return outs[:_num_outputs]


# onnxruntime writes LayerNormalization (its contrib kernel, same semantics) into optimized models of any
# opset, so the kernel also answers below opset 17, where the ONNX domain has no such operator yet
register("LayerNormalization", layer_normalization, since=1, until=17)

shape_rule("LayerNormalization")(layer_norm_rule)
