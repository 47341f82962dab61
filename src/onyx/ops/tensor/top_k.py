"""TopK: the k largest (or smallest) entries along an axis and their int64 indices.

Opset 1 takes ``k`` as an attribute, opset 10 as an input; opset 11 adds ``largest`` and ``sorted``.
Equal values keep the lower index first, as the spec requires; the output is always sorted.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.tensor._common import compute_dtype, norm_axis, scalar_int


def top_k(x, k: int, axis: int, largest: int = 1) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x)
    if x.ndim == 0:
        raise InvalidArgument("TopK: input must have rank >= 1, got a scalar")
    ax = norm_axis(axis, x.ndim)
    n = x.shape[ax]
    if not 0 <= k <= n:
        raise InvalidArgument(f"TopK: k={k} out of range for axis {ax} of size {n} (shape {x.shape})")
    keys = x.astype(compute_dtype(x.dtype), copy=False)
    if largest:
        # stable ascending sort of the reversed axis, read backwards: values descending and, among
        # equal values, the original indices ascending
        order = np.argsort(np.flip(keys, ax), axis=ax, kind="stable")
        last = np.take(order, np.arange(n - 1, n - 1 - k, -1), axis=ax)
        idx = (n - 1) - last
    else:
        order = np.argsort(keys, axis=ax, kind="stable")
        idx = np.take(order, np.arange(k), axis=ax)
    idx = idx.astype(np.int64, copy=False)
    return np.take_along_axis(x, idx, axis=ax), idx


@op("TopK", since=1, until=10)
def top_k_1(X, *, k, axis=-1):
    return top_k(X, int(k), axis)


@op("TopK", since=10, until=11)
def top_k_10(X, K, *, axis=-1):
    return top_k(X, scalar_int(K, "TopK: K"), axis)


@op("TopK", since=11)
def top_k_11(X, K, *, axis=-1, largest=1, sorted=1):  # noqa: A002 - the attribute's name
    return top_k(X, scalar_int(K, "TopK: K"), axis, largest)
