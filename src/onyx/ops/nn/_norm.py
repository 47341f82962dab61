"""Shared standardisation over trailing axes (LayerNormalization, GroupNormalization, ...)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument

_STASH = {
    1: np.dtype(np.float32),
    11: np.dtype(np.float64),
    10: np.dtype(np.float32),
    16: np.dtype(np.float32),
}


def stash_dtype(stash_type: int, x_dtype: np.dtype) -> np.dtype:
    if x_dtype == np.float64:
        return np.dtype(np.float64)
    if stash_type not in _STASH:
        raise InvalidArgument(f"stash_type {stash_type} is not a supported element type")
    return _STASH[stash_type]


def standardize_rows(x2: np.ndarray, epsilon: float, row_scale=None, row_bias=None):
    """Rows of the 2-D ``x2`` to zero mean and unit variance: returns (normalized, mean, inv_std).

    ``row_scale`` / ``row_bias`` (shape (R, 1)) are folded into the same passes when given.

    The row sums go through BLAS (a matrix-vector product and batched dot products), which is several
    times faster than numpy's reductions over the last axis.
    """
    r, n = x2.shape
    dt = x2.dtype
    if n > 8192:
        # long rows: numpy's pairwise summation keeps float32 sums accurate
        mean = x2.mean(axis=1, keepdims=True)
        d = x2 - mean
        var = np.square(d).mean(axis=1, keepdims=True)
    else:
        ones = np.full((n, 1), 1.0 / n, dtype=dt)
        mean = np.matmul(x2, ones)  # (R, 1)
        d = x2 - mean
        var = np.matmul(d[:, None, :], d[:, :, None]).reshape(r, 1)
        var *= dt.type(1.0 / n)
    var += dt.type(epsilon)
    inv = np.sqrt(var, out=var)
    np.reciprocal(inv, out=inv)
    d *= inv if row_scale is None else inv * row_scale
    if row_bias is not None:
        d += row_bias
    return d, mean, inv


def norm_axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise InvalidArgument(f"{what}: axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis
