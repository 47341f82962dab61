"""com.microsoft MultiHeadAttention: attention over already projected query, key and value.

query (B, S, D) (or packed QKV (B, S, N, 3, H) with no key/value); key (B, T, D), packed KV
(B, T, N, 2, H) or (B, N, T, H); value (B, T, Dv) or (B, N, T, H); bias (D + D + Dv) added to the
3-D query/key/value; past_key/past_value (B, N, P, H) prepended. Masks as in Attention
(``key_padding_mask``), ``attention_bias`` (B or 1, N or 1, S, T) added to the scaled scores.
Outputs: output (B, S, Dv), present_key, present_value and qk (the scaled scores plus biases).
"""

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._common import (
    add_bias,
    attend,
    back,
    causal_bias,
    heads,
    key_mask_bias,
    threads_of,
    to_compute,
)
from onyx.ops.registry import op, shape_rule


@op("MultiHeadAttention", domain="com.microsoft", since=1)
def multi_head_attention(
    query,
    key=None,
    value=None,
    bias=None,
    key_padding_mask=None,
    attention_bias=None,
    past_key=None,
    past_value=None,
    past_sequence_length=None,
    cache_indirection=None,
    *,
    num_heads,
    unidirectional=0,
    mask_filter_value=-10000.0,
    scale=0.0,
    _num_outputs=1,
    _ctx=None,
):
    what = "MultiHeadAttention"
    dtype = query.dtype
    n = num_heads
    q3 = to_compute(query)
    if q3.ndim == 5:
        if key is not None or q3.shape[3] != 3 or q3.shape[2] != n:
            raise InvalidArgument(f"{what}: packed QKV {query.shape} must be (B, S, N, 3, H) with no key")
        q = q3[:, :, :, 0].transpose(0, 2, 1, 3)
        k = q3[:, :, :, 1].transpose(0, 2, 1, 3)
        v = q3[:, :, :, 2].transpose(0, 2, 1, 3)
    else:
        if q3.ndim != 3 or key is None:
            raise InvalidArgument(f"{what}: query {query.shape} must be (B, S, D) with a key")
        d = q3.shape[2]
        if bias is not None:
            q3 = q3 + to_compute(bias[:d])
        q = heads(q3, n, what)
        k3 = to_compute(key)
        if k3.ndim == 5:
            k = k3[:, :, :, 0].transpose(0, 2, 1, 3)
            v = k3[:, :, :, 1].transpose(0, 2, 1, 3)
        elif k3.ndim == 4:
            k = k3
            if value is None or value.ndim != 4:
                raise InvalidArgument(f"{what}: key {key.shape} in (B, N, T, H) needs such a value")
            v = to_compute(value)
        else:
            if value is None:
                raise InvalidArgument(f"{what}: value is missing")
            v3 = to_compute(value)
            if bias is not None:
                k3 = k3 + to_compute(bias[d : 2 * d])
                v3 = v3 + to_compute(bias[2 * d :])
            k = heads(k3, n, what)
            v = heads(v3, n, what)
    batch, s = q.shape[0], q.shape[2]
    p = 0
    if past_key is not None and past_value is not None:
        p = past_key.shape[2]
        k = np.concatenate([to_compute(past_key), k], axis=2)
        v = np.concatenate([to_compute(past_value), v], axis=2)
    t = k.shape[2]
    sc = scale if scale else 1.0 / math.sqrt(q.shape[-1])
    b = key_mask_bias(key_padding_mask, batch, s, t, p, mask_filter_value, q.dtype, what)
    if unidirectional:
        b = add_bias(b, causal_bias(s, t, mask_filter_value, q.dtype))
    if attention_bias is not None:
        b = add_bias(b, to_compute(attention_bias))
    out, qk = attend(q, k, v, sc, b, what, want_qk=_num_outputs > 3, threads=threads_of(_ctx))
    outs = (back(out, dtype), back(k, dtype), back(v, dtype), None if qk is None else back(qk, dtype))
    return outs[0] if _num_outputs == 1 else outs[:_num_outputs]


@shape_rule("MultiHeadAttention", domain="com.microsoft")
def _shape(ctx):
    q, v = ctx.input_shape(0), ctx.input_shape(2)
    if q is None or len(q) != 3:
        ctx.set_output(0, ctx.input_elem(0), None)
        return
    dv = v[2] if v is not None and len(v) == 3 else (q[2] if v is None and ctx.input_rank(1) == 3 else None)
    ctx.set_output(0, ctx.input_elem(0), [q[0], q[1], dv])
