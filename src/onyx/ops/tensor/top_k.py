"""TopK: the k largest (or smallest) entries along an axis and their int64 indices.

Opset 1 takes ``k`` as an attribute, opset 10 as an input; opset 11 adds ``largest`` and ``sorted``.
Equal values keep the lower index first, as the spec requires; the output is always sorted.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import compute_dtype, norm_axis, scalar_int
from onyx.shape_inference import ShapeContext


def top_k(x, k: int, axis: int, largest: int = 1) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x)
    if x.ndim == 0:
        raise InvalidArgument("TopK: input must have rank >= 1, got a scalar")
    ax = norm_axis(axis, x.ndim)
    n = x.shape[ax]
    if not 0 <= k <= n:
        raise InvalidArgument(f"TopK: k={k} out of range for axis {ax} of size {n} (shape {x.shape})")
    keys = x.astype(compute_dtype(x.dtype), copy=False)
    if k * 8 <= n and n >= 64 and keys.dtype.kind in "iuf":
        idx = _partial_top_k(keys, k, ax, bool(largest))
        if idx is not None:
            return np.take_along_axis(x, idx, axis=ax), idx
    idx = _sorted_order(keys, ax, bool(largest))
    idx = np.take(idx, np.arange(k), axis=ax)
    idx = idx.astype(np.int64, copy=False)
    return np.take_along_axis(x, idx, axis=ax), idx


def _sorted_order(keys: np.ndarray, ax: int, largest: bool) -> np.ndarray:
    """Every index along ``ax`` in output order: by value, equal values by ascending index."""
    if not largest:
        return np.argsort(keys, axis=ax, kind="stable")
    # stable ascending sort of the reversed axis, read backwards: values descending and, among equal
    # values, the original indices ascending
    n = keys.shape[ax]
    return (n - 1) - np.flip(np.argsort(np.flip(keys, ax), axis=ax, kind="stable"), ax)


def _partial_top_k(keys: np.ndarray, k: int, ax: int, largest: bool) -> np.ndarray | None:
    """O(n) selection for small k: argpartition finds k candidates and the k-th value; rows where
    the partition kept the wrong ties (a higher index over a lower one) are redone exactly; then only
    the k survivors are sorted. None when NaNs make it unsafe."""
    if keys.dtype.kind == "f" and np.isnan(keys).any():
        return None
    rows = np.moveaxis(keys, ax, -1)
    lead = rows.shape[:-1]
    n = rows.shape[-1]
    r2 = rows.reshape(-1, n)
    if k == 0 or r2.shape[0] == 0:
        return np.zeros(keys.shape[:ax] + (k,) + keys.shape[ax + 1 :], dtype=np.int64)
    kth = n - k if largest else k - 1
    part = np.argpartition(r2, kth, axis=1)
    cand = part[:, kth:] if largest else part[:, :k]
    t = np.take_along_axis(r2, part[:, kth : kth + 1], axis=1)  # the k-th value of each row
    cand = np.sort(cand, axis=1)  # ascending index, so a stable sort by value breaks ties by index
    ties_kept = (np.take_along_axis(r2, cand, axis=1) == t).sum(axis=1)
    tie = r2 == t
    bad = tie.sum(axis=1) > ties_kept
    if bad.any():
        # the row has more ties than fit: keep the strictly better ones and the lowest-index ties
        sub, ts, ties = r2[bad], t[bad], tie[bad]
        better = sub > ts if largest else sub < ts
        need = k - better.sum(axis=1, keepdims=True)
        mask = better | (ties & (np.cumsum(ties, axis=1, dtype=np.int32) <= need))
        cand[bad] = np.nonzero(mask)[1].reshape(-1, k)
    vals = np.take_along_axis(r2, cand, axis=1)
    order = _sorted_order(vals, 1, largest)
    idx = np.take_along_axis(cand, order, axis=1).astype(np.int64, copy=False)
    return np.moveaxis(idx.reshape(lead + (k,)), -1, ax)


@op("TopK", since=1, until=10)
def top_k_1(X, *, k, axis=-1):
    return top_k(X, int(k), axis)


@op("TopK", since=10, until=11)
def top_k_10(X, K, *, axis=-1):
    return top_k(X, scalar_int(K, "TopK: K"), axis)


@op("TopK", since=11)
def top_k_11(X, K, *, axis=-1, largest=1, sorted=1):  # noqa: A002 - the attribute's name
    return top_k(X, scalar_int(K, "TopK: K"), axis, largest)


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("TopK")
@S.with_input_shape(index_outputs=(1,))
def _top_k_shape(ctx: ShapeContext, elem: int | None, src: list) -> None:
    if not src:
        ctx.fail("TopK: input must have rank >= 1, got a scalar")
    ax = S.norm_axis(ctx, ctx.attr("axis", -1), len(src), "TopK: axis")
    if ctx.opset < 10:
        k = int(S.required(ctx, "k"))
    else:
        kv = S.int_values(ctx, 1)
        k = kv[0] if kv is not None and len(kv) == 1 else ctx.new_dim()
    if S.is_int(k) and (k < 0 or S.is_int(src[ax]) and k > src[ax]):
        ctx.fail(f"TopK: k={k} out of range for axis {ax} of input shape {src}")
    out = src[:ax] + [k] + src[ax + 1 :]
    ctx.set_output(0, elem, out)
    ctx.set_output(1, S.INT64, out)
