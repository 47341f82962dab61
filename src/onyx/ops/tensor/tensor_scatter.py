"""TensorScatter: write ``update`` into a copy of the KV cache at per-batch ``write_indices``
along the sequence ``axis`` (``linear`` or ``circular`` mode)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor._common import norm_axis
from onyx.shape_inference import ShapeContext


@op("TensorScatter", since=24)
def tensor_scatter_24(past_cache, update, write_indices=None, *, mode="linear", axis=-2):
    cache = np.asarray(past_cache)
    upd = np.asarray(update)
    r = cache.ndim
    if r < 2 or upd.ndim != r:
        raise InvalidArgument(
            f"TensorScatter: past_cache {cache.shape} and update {upd.shape} must have the same rank >= 2"
        )
    ax = norm_axis(axis, r)
    if ax == 0:
        raise InvalidArgument("TensorScatter: axis cannot be 0 (the batch dimension)")
    if mode not in ("linear", "circular"):
        raise InvalidArgument(f"TensorScatter: mode must be 'linear' or 'circular', got {mode!r}")
    if any(upd.shape[d] != cache.shape[d] for d in range(r) if d != ax):
        raise InvalidArgument(
            f"TensorScatter: update {upd.shape} must match past_cache {cache.shape} except on axis {ax}"
        )
    nb = cache.shape[0]
    max_len, seq = cache.shape[ax], upd.shape[ax]
    if seq > max_len:
        raise InvalidArgument(f"TensorScatter: update length {seq} exceeds cache length {max_len}")
    if write_indices is None:
        wi = np.zeros(nb, dtype=np.int64)
    else:
        wi = np.asarray(write_indices).astype(np.int64).reshape(-1)
        if wi.shape[0] != nb:
            raise InvalidArgument(f"TensorScatter: write_indices has {wi.shape[0]} entries, batch is {nb}")
    pos = wi[:, None] + np.arange(seq)[None, :]  # (batch, seq)
    if mode == "circular":
        pos %= max_len
    elif pos.size and (wi.min() < 0 or pos.max() >= max_len):
        raise InvalidArgument(
            f"TensorScatter: write_indices {wi.tolist()} + {seq} exceed cache length {max_len} (linear mode)"
        )
    out = cache.copy()
    # move the sequence axis next to the batch axis: (batch, seq, rest...)
    ov = np.moveaxis(out, ax, 1)
    uv = np.moveaxis(upd, ax, 1)
    ov[np.arange(nb)[:, None], pos] = uv
    return out


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("TensorScatter")
def _tensor_scatter_shape(ctx: ShapeContext) -> None:
    cache, upd = ctx.input_shape(0), ctx.input_shape(1)
    if cache is not None and upd is not None and len(cache) != len(upd):
        ctx.fail(f"TensorScatter: past_cache {cache} and update {upd} must have the same rank")
    ctx.same_as_input(0)
