"""com.microsoft DecoderMaskedMultiHeadAttention: one decoding step of multi-head attention (what
onnxruntime's convert_generation writes for GPT-2 and Whisper with a shared KV buffer).

Self attention (key and value of shape (B, 1, hidden)): the new key/value row joins the cache: with
``past_present_share_buffer`` the cache is (B, N, max_length, H) and the row goes at
``past_sequence_length``; otherwise the present is the past followed by the row. The query attends to
every cached row and the new one; with ``cache_indirection`` (beam search), cached row t of beam j of
a batch entry is read from the beam the indirection names. Cross attention (key and value of shape
(B, N, L, H)): the query attends to them, and they are not returned.

``mask_index`` (B, total) masks keys whose entry is 0 with ``mask_filter_value``; ``attention_bias``
(one row per batch entry, shared by its beams) is added to the scaled scores; ``bias`` is added to
the projections (query, key, value in order; onnxruntime skips the value's when there is no past).
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule


def _heads(x: np.ndarray, n: int) -> np.ndarray:
    """(B, 1, n*h) -> (B, n, 1, h)."""
    b, s, d = x.shape
    return x.reshape(b, s, n, d // n).transpose(0, 2, 1, 3)


def _cache_rows(past, row_new, p, share, beam_width, indirection):
    """The (B, N, p + 1, H) keys (or values) the query sees, and the present to return."""
    past = np.asarray(past, np.float32)
    if share:
        present = past.copy()
        if p >= present.shape[2]:
            raise InvalidArgument(
                f"DecoderMaskedMultiHeadAttention: past_sequence_length {p} leaves no room in a cache of "
                f"{present.shape[2]}"
            )
        present[:, :, p] = row_new[:, :, 0]
    else:
        present = np.concatenate([past, row_new], axis=2)
    seen = present[:, :, : p + 1].copy()
    if indirection is not None and p:
        ind = np.asarray(indirection).astype(np.int64)  # (batch, beams, max_length)
        rows = seen.shape[0]
        beam = np.arange(rows) % beam_width
        base = np.arange(rows) - beam
        src = base[:, None] + ind[np.arange(rows) // beam_width, beam, :p]  # (rows, p)
        seen[:, :, :p] = present[src, :, np.arange(p)[None, :]].transpose(0, 2, 1, 3)
    return seen, present


@op("DecoderMaskedMultiHeadAttention", domain="com.microsoft", since=1)
def decoder_masked_multi_head_attention(
    query,
    key=None,
    value=None,
    mask_index=None,
    attention_bias=None,
    past_key=None,
    past_value=None,
    past_sequence_length=None,
    beam_width=None,
    cache_indirection=None,
    bias=None,
    *,
    num_heads,
    mask_filter_value=-10000.0,
    output_qk=0,
    past_present_share_buffer=0,
    scale=0.0,
    _num_outputs=1,
):
    q = np.asarray(query)
    dtype = q.dtype
    if q.ndim != 3 or q.shape[1] != 1:
        raise InvalidArgument(
            f"DecoderMaskedMultiHeadAttention: query must be (batch, 1, hidden), got {q.shape}"
        )
    work = np.float32
    q = q.astype(work)
    if key is None:  # packed QKV: query, key and value of equal width
        d = q.shape[2] // 3
        q, k, v = q[..., :d], q[..., d : 2 * d], q[..., 2 * d :]
    else:
        k, v = np.asarray(key, work), np.asarray(value, work)
    cross = k.ndim == 4
    if bias is not None:
        bb = np.asarray(bias, work)
        hq = q.shape[2]
        q = q + bb[:hq]
        if not cross:
            k = k + bb[hq : hq + k.shape[2]]
            if past_key is not None:  # onnxruntime leaves the value's bias out when there is no past
                v = v + bb[hq + k.shape[2] :]
    if q.shape[2] % num_heads:
        raise InvalidArgument(
            f"DecoderMaskedMultiHeadAttention: hidden size {q.shape[2]} not a multiple of num_heads"
        )
    qh = _heads(q, num_heads)  # (B, N, 1, h)
    h = qh.shape[-1]
    present_k = present_v = None
    bw = int(np.asarray(beam_width).reshape(-1)[0]) if beam_width is not None else 1
    if cross:
        keys, vals = k, v
    else:
        kh, vh = _heads(k, num_heads), _heads(v, num_heads)
        if past_key is None:
            keys, vals = kh, vh
            present_k, present_v = kh, vh
        else:
            share = bool(past_present_share_buffer)
            p = int(np.asarray(past_sequence_length).reshape(-1)[0]) if share else np.shape(past_key)[2]
            keys, present_k = _cache_rows(past_key, kh, p, share, bw, cache_indirection)
            vals, present_v = _cache_rows(past_value, vh, p, share, bw, cache_indirection)
    sc = float(scale) if scale else 1.0 / np.sqrt(h)
    scores = np.matmul(qh, np.swapaxes(keys, -1, -2)) * work(sc)  # (B, N, 1, T)
    t = scores.shape[-1]
    if mask_index is not None:
        m = np.asarray(mask_index)
        if m.shape != (scores.shape[0], t) and m.ndim == 2 and m.shape[1] >= t:
            m = m[:, :t]
        if m.shape != (scores.shape[0], t):
            raise InvalidArgument(
                f"DecoderMaskedMultiHeadAttention: mask_index {m.shape} must be (batch, {t})"
            )
        scores = scores + np.where(m == 0, work(mask_filter_value), work(0))[:, None, None, :]
    if attention_bias is not None:
        ab = np.asarray(attention_bias, work)[..., :t]
        if ab.shape[0] > 1:  # one row per batch entry, shared by its beams
            ab = ab[np.arange(scores.shape[0]) // bw]
        scores = scores + ab
    qk = scores.copy()
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    probs = e / e.sum(axis=-1, keepdims=True)
    out = np.matmul(probs, vals)  # (B, N, 1, hv)
    y = out.transpose(0, 2, 1, 3).reshape(out.shape[0], 1, -1).astype(dtype)
    results = [y]
    if _num_outputs > 1:
        results += [
            None if present_k is None else present_k.astype(dtype),
            None if present_v is None else present_v.astype(dtype),
        ]
    if _num_outputs > 3:
        results.append(qk.astype(dtype))
    return tuple(results) if _num_outputs > 1 else y


@shape_rule("DecoderMaskedMultiHeadAttention", domain="com.microsoft")
def _shape(ctx) -> None:
    q = ctx.input_shape(0)
    elem = ctx.input_elem(0)
    ctx.set_output(0, elem, None if q is None else [q[0], 1, None])
    for i in (1, 2):
        if i < ctx.num_outputs:
            ctx.set_output(i, elem, None)
    if ctx.num_outputs > 3:
        ctx.set_output(3, elem, None)
