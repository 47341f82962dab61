"""com.microsoft QAttention: the Attention op whose packed Q/K/V projection is an 8-bit integer product.

QKV = (input - input_zero_point) @ (weight - weight_zero_point), exact in int32, times input_scale *
weight_scale (one value or one per weight column) plus bias, in float32 as onnxruntime rescales it; then
multi-head attention as com.microsoft Attention computes it (mask_index forms, past/present,
unidirectional, scale, mask_filter_value). Outputs: (B, S, D) and optional present (2, B, N, P+S, H)."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._common import add_bias, attend, back, causal_bias, heads, key_mask_bias, threads_of
from onyx.ops.contrib._quantized import to_float
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule

OP = "QAttention"


def _projection(x, w, bias, input_scale, weight_scale, input_zero_point, weight_zero_point, threads):
    """float32 (B, S, 3D): the integer product rescaled, plus bias."""
    _integer.check_eight_bit(x, "input", OP)
    _integer.check_eight_bit(w, "weight", OP)
    if x.ndim != 3 or w.ndim != 2 or w.shape[0] != x.shape[2]:
        raise InvalidArgument(f"{OP}: input {x.shape} (B, S, D) and weight {w.shape} (D, 3D) do not fit")
    n = w.shape[1]
    if n % 3:
        raise InvalidArgument(f"{OP}: weight {w.shape} must have 3 * hidden size columns")
    zx = _integer.zero_point(input_zero_point, x, "input_zero_point", OP)
    zw = _integer.zero_point(weight_zero_point, w, "weight_zero_point", OP, n)
    sx = _integer.scale_of(input_scale, "input_scale", OP)
    sw = _integer.scale_of(weight_scale, "weight_scale", OP, n)
    if np.asarray(bias).dtype != np.float32:
        raise InvalidArgument(f"{OP}: bias must be float32, got {np.asarray(bias).dtype}")
    acc = _integer.matmul(x, w, zx, zw, OP, threads)
    return to_float(acc, sx[0] * sw, bias, OP)


@op("QAttention", domain="com.microsoft", since=1)
def q_attention(
    input,  # noqa: A002
    weight,
    bias,
    input_scale,
    weight_scale,
    mask_index=None,
    input_zero_point=None,
    weight_zero_point=None,
    past=None,
    *,
    num_heads,
    unidirectional=0,
    mask_filter_value=-10000.0,
    scale=0.0,
    do_rotary=0,
    past_present_share_buffer=0,
    _num_outputs=1,
    _ctx=None,
):
    if do_rotary or past_present_share_buffer:
        raise InvalidArgument(f"{OP}: do_rotary and past_present_share_buffer are not supported")
    threads = threads_of(_ctx)
    qkv = _projection(
        input, weight, bias, input_scale, weight_scale, input_zero_point, weight_zero_point, threads
    )
    d = weight.shape[1] // 3
    q, k, v = (heads(qkv[..., i * d : (i + 1) * d], num_heads, OP) for i in range(3))
    batch, s = input.shape[0], input.shape[1]
    p = 0
    if past is not None:
        past = np.asarray(past)
        want = (2, batch, num_heads, d // num_heads)
        if past.ndim != 5 or past.shape[:3] != want[:3] or past.shape[4] != want[3]:
            raise InvalidArgument(f"{OP}: past {past.shape} must be (2, {batch}, {num_heads}, P, {want[3]})")
        pf = past.astype(np.float32, copy=False)
        p = past.shape[3]
        k = np.concatenate([pf[0], k], axis=2)
        v = np.concatenate([pf[1], v], axis=2)
    t = k.shape[2]
    sc = scale if scale else 1.0 / math.sqrt(d // num_heads)
    b = key_mask_bias(mask_index, batch, s, t, p, mask_filter_value, np.float32, OP)
    if unidirectional:
        b = add_bias(b, causal_bias(s, t, mask_filter_value, np.float32))
    out, _ = attend(q, k, v, sc, b, OP, threads=threads)
    if _num_outputs == 1:
        return back(out, np.float32)
    return back(out, np.float32), np.stack([k, v])


@shape_rule("QAttention", domain="com.microsoft")
def _shape(ctx) -> None:
    s, w = ctx.input_shape(0), ctx.input_shape(1)
    d = w[1] // 3 if w and isinstance(w[1], int) else None
    ctx.set_output(0, ctx.input_elem(3), None if s is None or len(s) != 3 else [s[0], s[1], d])
    if ctx.num_outputs > 1:
        ctx.set_output(1, ctx.input_elem(3), None)
