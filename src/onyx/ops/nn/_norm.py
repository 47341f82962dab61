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


def standardize_rows(x2: np.ndarray, epsilon: float):
    """Rows of the 2-D ``x2`` to zero mean and unit variance: returns (normalized, mean, inv_std)."""
    mean = x2.mean(axis=1, keepdims=True)
    d = x2 - mean
    sq = np.square(d)
    var = sq.mean(axis=1, keepdims=True)
    var += x2.dtype.type(epsilon)
    inv = np.sqrt(var, out=var)
    np.reciprocal(inv, out=inv)
    d *= inv
    return d, mean, inv


def norm_axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise InvalidArgument(f"{what}: axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis
