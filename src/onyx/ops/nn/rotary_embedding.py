"""RotaryEmbedding (opset 23): rotate (half-split or interleaved) pairs of each head by cos/sin caches."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("RotaryEmbedding", since=23)
def rotary_embedding(
    X, cos_cache, sin_cache, position_ids=None, *, interleaved=0, num_heads=0, rotary_embedding_dim=0
):
    dtype = X.dtype
    ct = compute_dtype(dtype)
    if X.ndim == 4:
        b, _, s, d = X.shape
        x = X
        head_axis_after_seq = False
    elif X.ndim == 3:
        if not num_heads:
            raise InvalidArgument(f"RotaryEmbedding: 3-D X {X.shape} needs the num_heads attribute")
        b, s, hidden = X.shape
        if hidden % num_heads:
            raise InvalidArgument(
                f"RotaryEmbedding: hidden size {hidden} not divisible by num_heads={num_heads}"
            )
        d = hidden // num_heads
        x = X.reshape(b, s, num_heads, d)
        head_axis_after_seq = True
    else:
        raise InvalidArgument(f"RotaryEmbedding: X of shape {X.shape} must be 3-D or 4-D")
    r = int(rotary_embedding_dim) or d
    if r > d or r % 2:
        raise InvalidArgument(f"RotaryEmbedding: rotary_embedding_dim {r} must be even and <= head size {d}")
    half = r // 2
    if position_ids is not None:
        cos = cos_cache[position_ids]
        sin = sin_cache[position_ids]
    else:
        cos, sin = cos_cache, sin_cache
    if cos.shape[-1] != half or sin.shape[-1] != half:
        raise InvalidArgument(
            f"RotaryEmbedding: cos/sin caches {cos.shape}/{sin.shape} need last dimension {half}"
        )
    cos = np.broadcast_to(cos.astype(ct, copy=False), (b, s, half))
    sin = np.broadcast_to(sin.astype(ct, copy=False), (b, s, half))
    if head_axis_after_seq:
        cos = cos[:, :, None, :]
        sin = sin[:, :, None, :]
    else:
        cos = cos[:, None, :, :]
        sin = sin[:, None, :, :]
    xc = x.astype(ct, copy=True) if ct != dtype else x.copy()
    if interleaved:
        x1 = x[..., 0:r:2].astype(ct, copy=False)
        x2 = x[..., 1:r:2].astype(ct, copy=False)
        o1, o2 = xc[..., 0:r:2], xc[..., 1:r:2]
    else:
        x1 = x[..., :half].astype(ct, copy=False)
        x2 = x[..., half:r].astype(ct, copy=False)
        o1, o2 = xc[..., :half], xc[..., half:r]
    t = sin * x2
    np.multiply(cos, x1, out=o1)
    o1 -= t
    np.multiply(sin, x1, out=t)
    np.multiply(cos, x2, out=o2)
    o2 += t
    return back(xc.reshape(X.shape), dtype)


shape_rule("RotaryEmbedding")(same_shape_rule)
