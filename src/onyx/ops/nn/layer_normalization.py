"""LayerNormalization: standardise over axes [axis, rank), then scale and shift; Mean and InvStdDev."""

from __future__ import annotations

import numpy as np

from onyx.kernels.norm import layer_norm_rows
from onyx.ops.nn._common import back, check_unidirectional
from onyx.ops.nn._norm import norm_axis, spans, stash_dtype
from onyx.ops.nn._shapes import layer_norm_rule
from onyx.ops.registry import op, register, shape_rule


@op("LayerNormalization", since=17)
def layer_normalization(X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1, _num_outputs=1, _ctx=None):
    ax = norm_axis(axis, max(X.ndim, 1), "LayerNormalization")
    check_unidirectional(X.shape, Scale, "LayerNormalization", "Scale")
    if B is not None:
        check_unidirectional(X.shape, B, "LayerNormalization", "B")
    st = stash_dtype(stash_type, X.dtype)
    lead = X.shape[:ax]
    rows = int(np.prod(lead))
    cols = int(np.prod(X.shape[ax:]))
    x2 = X.astype(st, copy=False).reshape(rows, cols)
    threads = _ctx.intra_op_num_threads if _ctx is not None else 0
    # the affine stage runs in the stash precision too (one rounding to X's type at the end): in the
    # kernel where Scale and B hold one value per element of a row, else broadcast here
    inside = spans(Scale, X.shape[ax:]) and spans(B, X.shape[ax:])
    y, _, mean, inv = layer_norm_rows(
        x2, Scale if inside else None, B if inside else None, epsilon=epsilon, threads=threads
    )
    y = y.reshape(X.shape)
    if not inside:
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
