"""com.microsoft RotaryEmbedding: rotate the first ``rotary_embedding_dim`` features of every head.

input (B, S, N*H) (``num_heads`` needed when the rotary dim is not the whole hidden size) or
(B, N, S, H); position_ids (B, S), or one value: the first position (positions offset + arange(S));
cos_cache/sin_cache (max_positions, rotary_dim / 2). Pairs are (x[2i], x[2i+1]) when
``interleaved``, else (x[i], x[i + rotary_dim/2]); each becomes (a cos - b sin, b cos + a sin).
"""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.contrib._common import back, rule_like_input0, to_compute
from onyx.ops.registry import op, shape_rule


@op("RotaryEmbedding", domain="com.microsoft", since=1)
def rotary_embedding(
    input,  # noqa: A002
    position_ids,
    cos_cache,
    sin_cache,
    *,
    interleaved=0,
    num_heads=0,
    rotary_embedding_dim=0,
    scale=1.0,
    is_packed_batching=0,
):
    what = "RotaryEmbedding"
    dtype = input.dtype
    x = to_compute(input)
    half = cos_cache.shape[-1]
    if x.ndim == 4:
        b, n, s, h = x.shape
        xs = x.transpose(0, 2, 1, 3)  # (B, S, N, H)
    elif x.ndim == 3:
        b, s, d = x.shape
        if num_heads:
            n = num_heads
        elif rotary_embedding_dim:
            raise InvalidArgument(f"{what}: num_heads is needed with rotary_embedding_dim on a 3-D input")
        else:
            n = d // (2 * half)
        if n <= 0 or d % n:
            raise InvalidArgument(f"{what}: hidden size {d} is not a multiple of num_heads {n}")
        h = d // n
        xs = x.reshape(b, s, n, h)
    else:
        raise InvalidArgument(f"{what}: input must be 3-D or 4-D, got {input.shape}")
    rot = rotary_embedding_dim or h
    if rot > h or rot != 2 * half:
        raise InvalidArgument(
            f"{what}: rotary dim {rot} does not fit head size {h} and cache {cos_cache.shape}"
        )
    pid = np.asarray(position_ids).astype(np.int64)
    if pid.size == 1 and pid.ndim <= 1:
        pos = np.broadcast_to(int(pid.reshape(-1)[0]) + np.arange(s), (b, s))
    else:
        pos = np.broadcast_to(pid, (b, s))
    if pos.size and (pos.min() < 0 or pos.max() >= cos_cache.shape[0]):
        raise InvalidArgument(f"{what}: position ids out of range [0, {cos_cache.shape[0]})")
    cos = to_compute(cos_cache)[pos][:, :, None, :]  # (B, S, 1, half)
    sin = to_compute(sin_cache)[pos][:, :, None, :]
    out = np.array(xs, copy=True)
    if interleaved:
        a = xs[..., 0:rot:2]
        c = xs[..., 1:rot:2]
        out[..., 0:rot:2] = a * cos - c * sin
        out[..., 1:rot:2] = c * cos + a * sin
    else:
        a = xs[..., :half]
        c = xs[..., half:rot]
        out[..., :half] = a * cos - c * sin
        out[..., half:rot] = c * cos + a * sin
    if x.ndim == 4:
        out = out.transpose(0, 2, 1, 3)
    else:
        out = out.reshape(b, s, n * h)
    return back(np.ascontiguousarray(out), dtype)


@shape_rule("RotaryEmbedding", domain="com.microsoft")
def _shape(ctx):
    rule_like_input0(ctx)
