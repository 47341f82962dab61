"""com.microsoft GroupQueryAttention (the ONNX Runtime GenAI model builder's attention for LLMs), the
float path of onnxruntime's CPU kernel: grouped K/V heads, a BNSH KV cache, rotary embedding from
cos/sin caches, causal and sliding-window masks, softcap, attention bias and the head-sink /
smooth softmax.

Per batch entry b, ``seqlens_k[b] + 1`` is the total length T after this step. For the first prompt
(the query as long as ``total_sequence_length``) nothing is cached yet; otherwise the new tokens
follow the T - S cached ones. Query row s sits at absolute position P + s (P: the cached count) and
sees keys [0, P + s] (and, with ``local_window_size`` w, only the last w of them). Rotary positions
are P + s, or ``position_ids`` (for the first prompt onnxruntime reads only ``position_ids[0, 0]`` and
counts on from it, for every batch entry). The present caches hold the past rows and the new ones,
``max(past buffer length, total_sequence_length)`` long; rows past T are zero.

Not implemented: quantized KV caches (int8/int4/float8, k_scale/v_scale), ``sliding_window_cache``,
``query_seqlens`` (right-padded chunks), q/k RMS norms and the ``output_qk`` output.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ops.registry import op, shape_rule

FLOATS = (np.float16, np.float32)


def _heads(x: np.ndarray, n: int, h: int) -> np.ndarray:
    """(B, S, n*h) -> (B, n, S, h)."""
    b, s, _ = x.shape
    return x.reshape(b, s, n, h).transpose(0, 2, 1, 3)


def _rotate(
    x: np.ndarray, pos: np.ndarray, cos: np.ndarray, sin: np.ndarray, interleaved: bool
) -> np.ndarray:
    """Rotary embedding of (B, n, S, h) at positions (B, S); the first 2 * cos.shape[1] dims rotate."""
    half = cos.shape[1]
    c = cos[pos][:, None]  # (B, 1, S, half)
    s = sin[pos][:, None]
    out = x.copy()
    if interleaved:
        x1, x2 = x[..., 0 : 2 * half : 2], x[..., 1 : 2 * half : 2]
        out[..., 0 : 2 * half : 2] = x1 * c - x2 * s
        out[..., 1 : 2 * half : 2] = x2 * c + x1 * s
    else:
        x1, x2 = x[..., :half], x[..., half : 2 * half]
        out[..., :half] = x1 * c - x2 * s
        out[..., half : 2 * half] = x2 * c + x1 * s
    return out


def _split(query, key, value, num_heads: int, kv_num_heads: int):
    q = np.asarray(query)
    if q.ndim != 3:
        raise InvalidArgument(f"GroupQueryAttention: query must be (batch, sequence, hidden), got {q.shape}")
    if key is None:  # packed QKV
        if value is not None:
            raise InvalidArgument("GroupQueryAttention: value given without key")
        d = q.shape[2]
        if d % (num_heads + 2 * kv_num_heads):
            raise InvalidArgument(
                f"GroupQueryAttention: packed QKV width {d} is not a multiple of num_heads + 2 * kv_num_heads"
            )
        h = d // (num_heads + 2 * kv_num_heads)
        qs, ks = num_heads * h, kv_num_heads * h
        return q[..., :qs], q[..., qs : qs + ks], q[..., qs + ks :], h
    k, v = np.asarray(key), np.asarray(value)
    if q.shape[2] % num_heads:
        raise InvalidArgument(f"GroupQueryAttention: hidden size {q.shape[2]} is not a multiple of num_heads")
    h = q.shape[2] // num_heads
    if k.shape != v.shape or k.ndim != 3 or k.shape[:2] != q.shape[:2] or k.shape[2] != kv_num_heads * h:
        raise InvalidArgument(
            f"GroupQueryAttention: key {k.shape} and value {v.shape} must be (batch, sequence, "
            f"{kv_num_heads * h}) for query {q.shape}"
        )
    return q, k, v, h


@op("GroupQueryAttention", domain="com.microsoft", since=1)
def group_query_attention(
    query,
    key=None,
    value=None,
    past_key=None,
    past_value=None,
    seqlens_k=None,
    total_sequence_length=None,
    cos_cache=None,
    sin_cache=None,
    position_ids=None,
    attention_bias=None,
    head_sink=None,
    k_scale=None,
    v_scale=None,
    q_norm_weight=None,
    k_norm_weight=None,
    query_seqlens=None,
    *,
    num_heads,
    kv_num_heads,
    causal=1,
    do_rotary=0,
    k_norm_epsilon=None,
    k_quant_type="NONE",
    kv_cache_bit_width=0,
    local_window_size=-1,
    q_norm_epsilon=None,
    qk_norm_epsilon=1e-6,
    qk_output=0,
    rotary_interleaved=0,
    scale=0.0,
    sliding_window_cache=0,
    smooth_softmax=0,
    softcap=0.0,
    v_quant_type="NONE",
    _num_outputs=3,
):
    unsupported = [
        name
        for name, given in (
            ("k_scale/v_scale (quantized KV cache)", k_scale is not None or v_scale is not None),
            ("q_norm_weight/k_norm_weight", q_norm_weight is not None or k_norm_weight is not None),
            ("query_seqlens", query_seqlens is not None),
            ("sliding_window_cache", bool(sliding_window_cache)),
            ("qk_output", bool(qk_output) or _num_outputs > 3),
            ("kv_cache_bit_width", bool(kv_cache_bit_width)),
        )
        if given
    ]
    if unsupported:
        raise OnyxNotImplemented(f"GroupQueryAttention: {', '.join(unsupported)} not implemented")
    if num_heads % kv_num_heads:
        raise InvalidArgument(
            f"GroupQueryAttention: num_heads {num_heads} not a multiple of kv_num_heads {kv_num_heads}"
        )
    if seqlens_k is None or total_sequence_length is None:
        raise InvalidArgument("GroupQueryAttention: seqlens_k and total_sequence_length are required")
    q, k, v, h = _split(query, key, value, num_heads, kv_num_heads)
    dtype = q.dtype
    if dtype.type not in FLOATS:
        raise InvalidArgument(f"GroupQueryAttention: float or float16 inputs expected, got {dtype}")
    b, s = q.shape[:2]
    lens = np.asarray(seqlens_k).reshape(-1).astype(np.int64) + 1
    total = int(np.asarray(total_sequence_length).reshape(-1)[0])
    if lens.shape != (b,):
        raise InvalidArgument(
            f"GroupQueryAttention: seqlens_k must have {b} entries, got {np.shape(seqlens_k)}"
        )
    work = np.float32
    qh = _heads(q.astype(work), num_heads, h)
    kh = _heads(k.astype(work), kv_num_heads, h)
    vh = _heads(v.astype(work), kv_num_heads, h)
    first_prompt = s == total
    cached = np.zeros(b, np.int64) if first_prompt else lens - s
    if (cached < 0).any():
        raise InvalidArgument(f"GroupQueryAttention: seqlens_k {lens - 1} shorter than the {s} new tokens")
    past_len = 0 if past_key is None else np.shape(past_key)[2]
    if not first_prompt and (past_key is None or (cached > past_len).any()):
        raise InvalidArgument(
            f"GroupQueryAttention: {cached.max()} cached tokens expected, the past holds {past_len}"
        )
    if do_rotary:
        if cos_cache is None or sin_cache is None:
            raise InvalidArgument("GroupQueryAttention: do_rotary needs cos_cache and sin_cache")
        cos, sin = np.asarray(cos_cache, work), np.asarray(sin_cache, work)
        if position_ids is not None:
            pos = np.broadcast_to(np.asarray(position_ids, np.int64), (b, s))
            if first_prompt:  # onnxruntime reads only the tensor's first position and counts on
                pos = np.broadcast_to(pos[0, 0] + np.arange(s)[None, :], (b, s))
        else:
            pos = cached[:, None] + np.arange(s)[None, :]
        pos = np.minimum(pos, cos.shape[0] - 1)
        qh = _rotate(qh, pos, cos, sin, bool(rotary_interleaved))
        kh = _rotate(kh, pos, cos, sin, bool(rotary_interleaved))
    present_len = max(past_len, total)
    pk = np.zeros((b, kv_num_heads, present_len, h), work)
    pv = np.zeros_like(pk)
    out = np.zeros((b, num_heads, s, h), work)
    group = num_heads // kv_num_heads
    sc = float(scale) if scale else 1.0 / np.sqrt(h)
    bias = None if attention_bias is None else np.asarray(attention_bias, work)
    sink = None if head_sink is None else np.asarray(head_sink, work).reshape(-1)
    for i in range(b):
        p, t = int(cached[i]), int(lens[i])
        if p:
            pk[i, :, :p] = np.asarray(past_key, work)[i, :, :p]
            pv[i, :, :p] = np.asarray(past_value, work)[i, :, :p]
        new = min(s, present_len - p)
        pk[i, :, p : p + new] = kh[i, :, :new]
        pv[i, :, p : p + new] = vh[i, :, :new]
        keys = np.repeat(pk[i, :, :t], group, axis=0)  # (N, T, h)
        vals = np.repeat(pv[i, :, :t], group, axis=0)
        scores = np.matmul(qh[i], keys.transpose(0, 2, 1)) * work(sc)  # (N, S, T)
        if softcap:
            scores = work(softcap) * np.tanh(scores / work(softcap))
        if bias is not None:
            scores = scores + np.broadcast_to(bias[i % bias.shape[0]][..., :t], scores.shape)
        rows = p + np.arange(s)[:, None]
        cols = np.arange(t)[None, :]
        keep = np.ones((s, t), bool)
        if causal:
            keep &= cols <= rows
        if local_window_size > 0:
            keep &= cols > rows - local_window_size
        scores = np.where(keep[None], scores, -np.inf)
        top = scores.max(axis=-1, keepdims=True)
        if sink is not None:
            top = np.maximum(top, sink[:, None, None])
        top = np.where(np.isfinite(top), top, 0)
        e = np.exp(scores - top)
        denom = e.sum(axis=-1, keepdims=True)
        if sink is not None:
            denom += np.exp(sink[:, None, None] - top)
        elif smooth_softmax:
            denom += np.exp(-top)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[i] = np.matmul(e / denom, vals)
    y = out.transpose(0, 2, 1, 3).reshape(b, s, num_heads * h).astype(dtype)
    pk_dtype = np.asarray(past_key).dtype if past_key is not None else dtype
    return y, pk.astype(pk_dtype), pv.astype(pk_dtype)


@shape_rule("GroupQueryAttention", domain="com.microsoft")
def _shape(ctx) -> None:
    q = ctx.input_shape(0)
    n, nkv = ctx.attr("num_heads"), ctx.attr("kv_num_heads")
    elem = ctx.input_elem(0)
    if q is None or len(q) != 3 or not isinstance(q[2], int):
        ctx.set_output(0, elem, None if q is None else [q[0], q[1], None])
        h = None
    elif ctx.has_input(1):
        h = q[2] // n
        ctx.set_output(0, elem, q)
    else:
        h = q[2] // (n + 2 * nkv)
        ctx.set_output(0, elem, [q[0], q[1], n * h])
    for i in (1, 2):
        if i < ctx.num_outputs:
            batch = q[0] if q is not None else None
            ctx.set_output(i, ctx.input_elem(3) if ctx.has_input(3) else elem, [batch, nkv, ctx.new_dim(), h])
