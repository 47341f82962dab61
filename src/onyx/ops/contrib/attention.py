"""com.microsoft Attention: multi-head self attention with packed Q/K/V projection weights.

QKV = input @ weights + bias, split into Q, K, V (sizes from ``qkv_hidden_sizes`` or thirds), heads
split off; K and V appended to ``past`` (2, B, N, P, H); scores = Q K^T * scale (1/sqrt(head size)
unless ``scale``), plus the mask (``mask_index`` in any of its forms, masked places get
``mask_filter_value``), the causal mask when ``unidirectional``, and ``attention_bias``; softmax;
times V. Outputs: (B, S, Nv*H) and optional present (2, B, N, P+S, H).
"""

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels.products import product, product_t
from onyx.ops.contrib._common import (
    add_bias,
    attend,
    back,
    causal_bias,
    heads,
    heads_of_transposed,
    key_mask_bias,
    threads_of,
    to_compute,
)
from onyx.ops.registry import op, shape_rule


@op("Attention", domain="com.microsoft", since=1)
def attention(
    input,  # noqa: A002
    weights,
    bias=None,
    mask_index=None,
    past=None,
    attention_bias=None,
    past_sequence_length=None,
    *,
    num_heads,
    unidirectional=0,
    qkv_hidden_sizes=None,
    mask_filter_value=-10000.0,
    scale=0.0,
    do_rotary=0,
    past_present_share_buffer=0,
    rotary_embedding_dim=0,
    _num_outputs=1,
    _ctx=None,
):
    what = "Attention"
    if do_rotary or past_present_share_buffer:
        raise InvalidArgument(f"{what}: do_rotary and past_present_share_buffer are not supported")
    if input.ndim != 3 or weights.ndim != 2 or weights.shape[0] != input.shape[2]:
        raise InvalidArgument(
            f"{what}: input {input.shape} (B, S, D) and weights {weights.shape} (D, 3H) do not fit"
        )
    dtype = input.dtype
    x = to_compute(input)
    w = weights.astype(x.dtype, copy=False)
    total = w.shape[1]
    sizes = list(qkv_hidden_sizes) if qkv_hidden_sizes else [total // 3] * 3
    if len(sizes) != 3 or sum(sizes) != total or sizes[0] != sizes[1]:
        raise InvalidArgument(f"{what}: qkv_hidden_sizes {sizes} do not fit the weights {weights.shape}")
    if bias is not None and bias.shape != (total,):
        raise InvalidArgument(f"{what}: bias {bias.shape} must be ({total},), one value per weight column")
    cuts = ((0, sizes[0]), (sizes[0], sizes[0] + sizes[1]), (sizes[0] + sizes[1], total))
    batch, s = input.shape[0], input.shape[1]
    if x.dtype.kind == "f" and w.flags.f_contiguous and not w.flags.c_contiguous and x.size:
        # the weight is stored transposed (onyx.runtime.repack): the projection runs as
        # QKV^T = W^T @ X^T, faster in OpenBLAS, and the heads are views of it (no copy back)
        qkv_t = product_t(x, w, x.size * total)
        if bias is not None:
            qkv_t += bias.astype(x.dtype, copy=False)[:, None]
        q, k, v = (heads_of_transposed(qkv_t[a:b], num_heads, batch, what) for a, b in cuts)
    else:
        qkv = product(x, w, x.size * total) if x.dtype.kind == "f" else np.matmul(x, w)
        if bias is not None:
            qkv += bias.astype(x.dtype, copy=False)
        q, k, v = (heads(qkv[..., a:b], num_heads, what) for a, b in cuts)
    p = 0
    if past is not None:
        pk = to_compute(past[0])
        pv = to_compute(past[1])
        p = pk.shape[2]
        k = np.concatenate([pk, k], axis=2)
        v = np.concatenate([pv, v], axis=2)
    t = k.shape[2]
    sc = scale if scale else 1.0 / math.sqrt(sizes[0] // num_heads)
    b = key_mask_bias(mask_index, batch, s, t, p, mask_filter_value, x.dtype, what)
    if unidirectional:
        b = add_bias(b, causal_bias(s, t, mask_filter_value, x.dtype))
    if attention_bias is not None:
        b = add_bias(b, to_compute(attention_bias))
    out, _ = attend(q, k, v, sc, b, what, threads=threads_of(_ctx))
    if _num_outputs == 1:
        return back(out, dtype)
    return back(out, dtype), back(np.stack([k, v]), dtype)


@shape_rule("Attention", domain="com.microsoft")
def _shape(ctx):
    s, w = ctx.input_shape(0), ctx.input_shape(1)
    sizes = ctx.attr("qkv_hidden_sizes")
    dv = sizes[2] if sizes else (w[1] // 3 if w and isinstance(w[1], int) else None)
    ctx.set_output(0, ctx.input_elem(0), None if s is None or len(s) != 3 else [s[0], s[1], dv])
