"""Shared pieces of the normalisation ops (LayerNormalization, GroupNormalization, ...): the stash
type, the axis, and whether a scale lines up with a row. The row loops are onyx.kernels.norm's."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels.norm import standardize_rows

__all__ = ["norm_axis", "spans", "standardize_rows", "stash_dtype"]

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


def norm_axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise InvalidArgument(f"{what}: axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def spans(v, tail: tuple) -> bool:
    """True when ``v`` holds one value per element of the trailing shape ``tail``, in its order (its
    shape is ``tail`` with any leading 1s), so that ``v.reshape(-1)`` lines up with a row."""
    if v is None:
        return True
    shape = tuple(v.shape)
    lead = len(shape) - len(tail)
    if lead < 0:
        shape = (1,) * -lead + shape
        lead = 0
    return shape[lead:] == tuple(tail) and all(d == 1 for d in shape[:lead])
