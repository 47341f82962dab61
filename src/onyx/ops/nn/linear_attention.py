"""LinearAttention (opset 27): recurrent linear attention (linear, gated, delta, gated_delta), GQA.

The recurrence runs token by token, each step vectorised over batch and heads.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._shapes import linear_attention_rule
from onyx.ops.registry import op, shape_rule

_RULES = ("linear", "gated", "delta", "gated_delta")


@op("LinearAttention", since=27)
def linear_attention(
    query,
    key,
    value,
    past_state=None,
    decay=None,
    beta=None,
    *,
    chunk_size=64,
    kv_num_heads,
    q_num_heads,
    scale=0.0,
    update_rule="gated_delta",
):
    rule = update_rule.decode() if isinstance(update_rule, bytes) else update_rule
    if rule not in _RULES:
        raise InvalidArgument(f"LinearAttention: update_rule {rule!r} must be one of {_RULES}")
    if query.ndim != 3 or key.ndim != 3 or value.ndim != 3:
        raise InvalidArgument(
            f"LinearAttention: query {query.shape}, key {key.shape}, value {value.shape} must be 3-D"
        )
    b, t, qh = query.shape
    hq, hkv = int(q_num_heads), int(kv_num_heads)
    if hq <= 0 or hkv <= 0 or hq % hkv or qh % hq or key.shape[2] % hkv or value.shape[2] % hkv:
        raise InvalidArgument(
            f"LinearAttention: head counts q={hq}, kv={hkv} do not fit query {query.shape}, key {key.shape}, "
            f"value {value.shape}"
        )
    dk = qh // hq
    dv = value.shape[2] // hkv
    if key.shape[2] // hkv != dk:
        raise InvalidArgument(f"LinearAttention: key head size {key.shape[2] // hkv} != query head size {dk}")
    g = hq // hkv
    ct = compute_dtype(query.dtype)
    q = query.astype(ct, copy=False).reshape(b, t, hkv, g, dk)
    k = key.astype(ct, copy=False).reshape(b, t, hkv, dk)
    v = value.astype(ct, copy=False).reshape(b, t, hkv, dv)
    sc = float(scale) if scale else 1.0 / np.sqrt(dk)
    gated = rule in ("gated", "gated_delta")
    delta = rule in ("delta", "gated_delta")
    if gated:
        if decay is None:
            raise InvalidArgument(f"LinearAttention: update_rule {rule!r} needs the decay input")
        dec = decay.astype(ct, copy=False)
        if dec.shape[2] == hkv * dk:
            gate = np.exp(dec.reshape(b, t, hkv, dk, 1))
        elif dec.shape[2] == hkv:
            gate = np.exp(dec.reshape(b, t, hkv, 1, 1))
        else:
            raise InvalidArgument(f"LinearAttention: decay of shape {decay.shape} must be (B, T, H_kv[*d_k])")
    if delta:
        if beta is None:
            raise InvalidArgument(f"LinearAttention: update_rule {rule!r} needs the beta input")
        bt = beta.astype(ct, copy=False)
        if bt.shape[2] not in (1, hkv):
            raise InvalidArgument(
                f"LinearAttention: beta of shape {beta.shape} must be (B, T, H_kv) or (B, T, 1)"
            )
        bt = np.broadcast_to(bt, (b, t, hkv))
    if past_state is not None:
        if past_state.shape != (b, hkv, dk, dv):
            raise InvalidArgument(
                f"LinearAttention: past_state {past_state.shape}, expected {(b, hkv, dk, dv)}"
            )
        s = past_state.astype(ct, copy=True)
    else:
        s = np.zeros((b, hkv, dk, dv), dtype=ct)
    out = np.empty((b, t, hkv, g, dv), dtype=ct)
    for i in range(t):
        ki = k[:, i]  # (B, H, dk)
        vi = v[:, i]  # (B, H, dv)
        if gated:
            s *= gate[:, i]
        if delta:
            pred = np.matmul(ki[:, :, None, :], s)[:, :, 0, :]  # (B, H, dv) = S^T k
            upd = (vi - pred) * bt[:, i, :, None]
            s += ki[:, :, :, None] * upd[:, :, None, :]
        else:
            s += ki[:, :, :, None] * vi[:, :, None, :]
        out[:, i] = np.matmul(q[:, i], s)  # (B, H, G, dv)
    out *= ct.type(sc)
    y = out.reshape(b, t, hq * dv)
    return back(y, query.dtype), back(s, query.dtype)


shape_rule("LinearAttention")(linear_attention_rule)
