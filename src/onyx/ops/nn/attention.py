"""Attention (opset 23, 24, 25): scaled dot-product attention with MHA/GQA/MQA, masks, KV cache.

Scores are computed by one batched matmul per call (GQA folds the query heads that share a key head
into the matmul's row dimension, so K and V are never repeated). Masks, causal frontier, padding and
local windows become one additive bias of shape broadcastable to (B, Hq, Sq, T), applied in place.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import LazyDtypeSet, ml_dtype
from onyx.ops.activation._softmax import masked_softmax_
from onyx.ops.nn._common import compute_dtype
from onyx.ops.nn._shapes import attention_rule
from onyx.ops.registry import op, shape_rule

_BF16 = LazyDtypeSet("bfloat16")  # ml_dtypes is imported only when a model meets bfloat16

_PRECISION = {
    1: np.dtype(np.float32),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
}


def _split_heads(x, heads, name):
    if x.ndim == 4:
        return x
    if x.ndim != 3:
        raise InvalidArgument(f"Attention: {name} of shape {x.shape} must be 3-D or 4-D")
    if not heads:
        raise InvalidArgument(f"Attention: 3-D {name} needs q_num_heads and kv_num_heads")
    b, s, h = x.shape
    if h % heads:
        raise InvalidArgument(f"Attention: hidden size {h} of {name} not divisible by {heads} heads")
    return x.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)


@op("Attention", since=25)
def attention(
    Q,
    K,
    V,
    attn_mask=None,
    past_key=None,
    past_value=None,
    nonpad_kv_seqlen=None,
    *,
    is_causal=0,
    kv_num_heads=None,
    q_num_heads=None,
    qk_matmul_output_mode=0,
    scale=None,
    softcap=0.0,
    softmax_precision=None,
    left_window_size=-1,
    right_window_size=-1,
    _num_outputs=1,
):
    """Attention, opset 25 on, and the computation of the earlier versions, whose kernels below pass
    their arguments on as they are (``**locals()``: inputs, attributes, the registry's ``_num_outputs``)."""
    out_dtype = Q.dtype
    # bfloat16 follows the spec's function body op by op (each step rounded to bfloat16); other
    # low-precision types compute in float32
    emulate = out_dtype in _BF16
    ct = out_dtype if emulate else compute_dtype(out_dtype)
    sm_dt = None
    if softmax_precision is not None:
        sm_dt = (
            ml_dtype("bfloat16") if int(softmax_precision) == 16 else _PRECISION.get(int(softmax_precision))
        )
    three_d = Q.ndim == 3
    q = _split_heads(Q, q_num_heads, "Q").astype(ct, copy=False)
    k = _split_heads(K, kv_num_heads, "K")
    v = _split_heads(V, kv_num_heads, "V")
    if (past_key is None) != (past_value is None):
        raise InvalidArgument("Attention: past_key and past_value must be given together")
    past_len = 0
    if past_key is not None:
        past_len = past_key.shape[2]
        k = np.concatenate([past_key, k.astype(past_key.dtype, copy=False)], axis=2)
        v = np.concatenate([past_value, v.astype(past_value.dtype, copy=False)], axis=2)
    present_k, present_v = k, v
    b, hq, sq, d = q.shape
    hkv, t = k.shape[1], k.shape[2]
    if k.shape[0] != b or v.shape[:3] != k.shape[:3] or k.shape[3] != d or hq % hkv:
        raise InvalidArgument(
            f"Attention: Q {q.shape}, K {k.shape}, V {v.shape} do not agree (need equal batch, head size, "
            "and q heads a multiple of kv heads)"
        )
    g = hq // hkv
    dv = v.shape[3]
    sc = float(scale) if scale is not None else 1.0 / np.sqrt(d)
    kc = k.astype(ct, copy=False)
    vc = v.astype(ct, copy=False)
    # (B, Hkv, G*Sq, D) @ (B, Hkv, D, T): query heads sharing a kv head stacked along rows
    if emulate:
        r = ct.type(np.sqrt(sc))
        qg = (q * r).reshape(b, hkv, g * sq, d)
        kc = kc * r
    else:
        qg = (q * ct.type(sc)).reshape(b, hkv, g * sq, d)
    scores = np.matmul(qg, kc.transpose(0, 1, 3, 2)).astype(ct, copy=False).reshape(b, hq, sq, t)
    qk_out = None
    mode = int(qk_matmul_output_mode)
    if mode == 0 and _num_outputs > 3:
        qk_out = scores.copy()
    if softcap and softcap > 0:
        cap = ct.type(softcap)
        scores /= cap
        np.tanh(scores, out=scores)
        scores *= cap
    if mode == 1 and _num_outputs > 3:
        qk_out = scores.copy()
    bias = _bias(
        attn_mask,
        b,
        hq,
        sq,
        t,
        past_len,
        nonpad_kv_seqlen,
        is_causal,
        left_window_size,
        right_window_size,
        ct,
    )
    if bias is not None:
        try:
            fits = np.broadcast_shapes(scores.shape, bias.shape) == scores.shape
        except ValueError:
            fits = False
        if not fits:
            raise InvalidArgument(
                f"Attention: attn_mask of shape {np.shape(attn_mask)} does not broadcast to {scores.shape}"
            )
        scores += bias
    if mode == 2 and _num_outputs > 3:
        qk_out = scores.copy()
    if sm_dt is not None and sm_dt != scores.dtype:
        scores = scores.astype(sm_dt)
    masked_softmax_(scores)
    if mode == 3 and _num_outputs > 3:
        qk_out = scores
    probs = scores.astype(ct, copy=False)
    y = np.matmul(probs.reshape(b, hkv, g * sq, t), vc).astype(ct, copy=False).reshape(b, hq, sq, dv)
    if three_d:
        y = y.transpose(0, 2, 1, 3).reshape(b, sq, hq * dv)
    y = y.astype(out_dtype, copy=False)
    outs = [y, present_k, present_v]
    if _num_outputs > 3:
        outs.append(qk_out.astype(out_dtype, copy=False) if qk_out is not None else None)
    return tuple(outs[:_num_outputs]) if _num_outputs > 1 else y


def _bias(mask, b, hq, sq, t, past_len, nonpad, is_causal, left, right, ct):
    """Additive bias (0 or -inf plus any float mask), broadcastable to (B, Hq, Sq, T), or None."""
    bias = None
    if mask is not None:
        if mask.dtype == np.bool_:
            mb = np.where(mask, ct.type(0), ct.type(-np.inf))
        else:
            mb = mask.astype(ct)
        if mb.shape[-1] < t:
            pad = np.full(mb.shape[:-1] + (t - mb.shape[-1],), -np.inf, dtype=ct)
            mb = np.concatenate([mb, pad], axis=-1)
        elif mb.shape[-1] > t:
            raise InvalidArgument(f"Attention: attn_mask of shape {mask.shape} is longer than {t} keys")
        bias = mb
    structural = None
    j = np.arange(t)
    if nonpad is not None:
        lens = np.asarray(nonpad).astype(np.int64).reshape(-1)
        if lens.shape[0] != b:
            raise InvalidArgument(f"Attention: nonpad_kv_seqlen of shape {np.shape(nonpad)}, expected ({b},)")
        offset = (lens - sq)[:, None, None, None] if past_len == 0 else np.full((b, 1, 1, 1), past_len)
        allowed = j[None, None, None, :] < lens[:, None, None, None]
    else:
        offset = past_len
        allowed = None
    need_pos = is_causal or (left is not None and left >= 0) or (right is not None and right >= 0)
    if need_pos:
        qpos = np.arange(sq)[:, None] + offset  # absolute query position, (Sq, 1) or (B,1,Sq,1)
        jj = j[None, :] if np.ndim(qpos) == 2 else j[None, None, None, :]
        a = np.ones(np.broadcast_shapes(np.shape(qpos), np.shape(jj)), dtype=bool)
        if is_causal:
            a &= jj <= qpos
        if left is not None and left >= 0:
            a &= jj >= qpos - left
        if right is not None and right >= 0:
            a &= jj <= qpos + right
        allowed = a if allowed is None else allowed & a
    if allowed is not None:
        structural = np.where(allowed, ct.type(0), ct.type(-np.inf))
        bias = structural if bias is None else bias + structural
    return bias


@op("Attention", since=23, until=24)
def attention_23(
    Q,
    K,
    V,
    attn_mask=None,
    past_key=None,
    past_value=None,
    *,
    is_causal=0,
    kv_num_heads=None,
    q_num_heads=None,
    qk_matmul_output_mode=0,
    scale=None,
    softcap=0.0,
    softmax_precision=None,
    _num_outputs=1,
):
    return attention(**locals())


@op("Attention", since=24, until=25)
def attention_24(
    Q,
    K,
    V,
    attn_mask=None,
    past_key=None,
    past_value=None,
    nonpad_kv_seqlen=None,
    *,
    is_causal=0,
    kv_num_heads=None,
    q_num_heads=None,
    qk_matmul_output_mode=0,
    scale=None,
    softcap=0.0,
    softmax_precision=None,
    _num_outputs=1,
):
    return attention(**locals())


shape_rule("Attention")(attention_rule)
