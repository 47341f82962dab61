"""FlexAttention (ai.onnx.preview v1): attention with optional score_mod / prob_mod subgraphs, GQA."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.activation._softmax import masked_softmax_
from onyx.ops.nn._shapes import flex_attention_rule
from onyx.ops.registry import op, shape_rule

_PRECISION = {1: np.float32, 11: np.float64, 10: np.float16, 16: np.float32}


def _apply(graph, x, what):
    out = graph(x)
    y = np.asarray(out[0] if isinstance(out, list | tuple) else out)
    if y.shape != x.shape:
        raise InvalidArgument(f"FlexAttention: {what} returned shape {y.shape}, expected {x.shape}")
    return y.astype(x.dtype, copy=False)


@op("FlexAttention", domain="ai.onnx.preview", since=1)
def flex_attention(Q, K, V, *, prob_mod=None, scale=None, score_mod=None, softmax_precision=None):
    if Q.ndim != 4 or K.ndim != 4 or V.ndim != 4:
        raise InvalidArgument(f"FlexAttention: Q {Q.shape}, K {K.shape}, V {V.shape} must be 4-D")
    b, hq, sq, d = Q.shape
    hkv, t = K.shape[1], K.shape[2]
    if K.shape[0] != b or K.shape[3] != d or V.shape[:3] != K.shape[:3] or hq % hkv:
        raise InvalidArgument(f"FlexAttention: Q {Q.shape}, K {K.shape}, V {V.shape} do not agree")
    if softmax_precision is not None:
        ct = np.dtype(_PRECISION.get(int(softmax_precision), np.float32))
    else:
        ct = np.dtype(np.float64 if Q.dtype == np.float64 else np.float32)
    g = hq // hkv
    sc = float(scale) if scale is not None else 1.0 / np.sqrt(d)
    q = Q.astype(ct, copy=False).reshape(b, hkv, g * sq, d)
    k = K.astype(ct, copy=False)
    v = V.astype(ct, copy=False)
    s = np.matmul(q, k.transpose(0, 1, 3, 2)).reshape(b, hq, sq, t)
    s *= ct.type(sc)
    if score_mod is not None:
        s = np.array(_apply(score_mod, s, "score_mod"), dtype=ct, copy=True)
    masked_softmax_(s)
    if prob_mod is not None:
        s = _apply(prob_mod, s, "prob_mod")
    y = np.matmul(s.reshape(b, hkv, g * sq, t), v).reshape(b, hq, sq, V.shape[3])
    return y.astype(Q.dtype, copy=False)


shape_rule("FlexAttention", domain="ai.onnx.preview")(flex_attention_rule)
