"""Helpers shared by the tensor-manipulation kernels: axes, index tensors, element-type checks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import LazyDtypeSet

#: ml_dtypes float types: numpy arithmetic on them is slow or missing, so compute in float32.
ML_FLOATS = LazyDtypeSet(
    "bfloat16",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn",
    "float6_e2m3fn",
    "float6_e3m2fn",
)
ML_INTS = LazyDtypeSet("int4", "uint4", "int2", "uint2")


def is_ml_dtype(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is one of the ml_dtypes extension types (bfloat16, float8, int4...)."""
    return dtype in ML_FLOATS or dtype in ML_INTS


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype to do arithmetic in: float32 for the low-precision floats, int types for int4/int2."""
    if dtype in ML_FLOATS:
        return np.dtype(np.float32)
    if dtype in ML_INTS:
        return np.dtype(np.int8) if dtype.name.startswith("int") else np.dtype(np.uint8)
    return dtype


def norm_axis(axis: Any, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[-rank, rank)`` as a non-negative int, or InvalidArgument."""
    a = int(axis)
    if not -rank <= a < rank:
        raise InvalidArgument(f"{what} {a} is out of range for a tensor of rank {rank}")
    return a + rank if a < 0 else a


def norm_axes(axes: Iterable[Any], rank: int, what: str = "axes") -> list[int]:
    """Each axis normalised with :func:`norm_axis`; repeated axes are an error."""
    out = [norm_axis(a, rank, what) for a in axes]
    if len(set(out)) != len(out):
        raise InvalidArgument(f"{what} {list(axes)} has repeated entries (rank {rank})")
    return out


def int_list(t: Any, what: str) -> list[int]:
    """A 0-D or 1-D integer tensor (or a Python list) as a list of ints."""
    if t is None:
        return []
    if isinstance(t, list | tuple):
        return [int(v) for v in t]
    arr = np.asarray(t)
    if arr.dtype.kind not in "iu":
        raise InvalidArgument(f"{what} must be an integer tensor, got element type {arr.dtype}")
    if arr.ndim > 1:
        raise InvalidArgument(f"{what} must be 1-D, got shape {arr.shape}")
    return [int(v) for v in arr.reshape(-1).tolist()]


def scalar_int(t: Any, what: str) -> int:
    """A tensor holding exactly one integer, as an int."""
    arr = np.asarray(t)
    if arr.size != 1:
        raise InvalidArgument(f"{what} must hold exactly one value, got shape {arr.shape}")
    if arr.dtype.kind not in "iub":
        raise InvalidArgument(f"{what} must be an integer, got element type {arr.dtype}")
    return int(arr.reshape(-1)[0])


def check_index_dtype(indices: np.ndarray, what: str = "indices") -> np.ndarray:
    """Indices must be an int32 or int64 tensor (any integer type is accepted)."""
    indices = np.asarray(indices)
    if indices.dtype.kind not in "iu":
        raise InvalidArgument(f"{what} must be an integer tensor, got element type {indices.dtype}")
    return indices


def norm_indices(indices: np.ndarray, dim: int, what: str = "indices") -> np.ndarray:
    """Indices in ``[-dim, dim)`` made non-negative (int64); out-of-range values are InvalidArgument."""
    idx = check_index_dtype(indices, what)
    if idx.dtype != np.int64:
        idx = idx.astype(np.int64)
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < -dim or hi >= dim:
            bad = lo if lo < -dim else hi
            raise InvalidArgument(f"{what} value {bad} is out of range for a dimension of size {dim}")
        if lo < 0:
            idx = np.where(idx < 0, idx + dim, idx)
    return idx


def flat_offsets(shape: tuple[int, ...], axis: int, idx: np.ndarray) -> np.ndarray:
    """Flat C-order offsets into a tensor of ``shape`` for GatherElements/ScatterElements.

    ``idx`` (non-negative, same rank) picks the position along ``axis``; every other coordinate is
    the element's own position in ``idx``: ``out[i][j][k] = data[i][idx[i][j][k]][k]`` for axis 1.
    One pass of integer arithmetic, much cheaper than numpy's multi-array fancy indexing.
    """
    rank = len(shape)
    strides = [1] * rank
    for d in range(rank - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    base: np.ndarray | int = 0
    for d in range(rank):
        if d == axis or idx.shape[d] == 1:
            continue
        s = [1] * rank
        s[d] = idx.shape[d]
        base = base + (np.arange(idx.shape[d], dtype=np.int64) * strides[d]).reshape(s)
    off = idx * strides[axis] if strides[axis] != 1 else idx.astype(np.int64, copy=True)
    off += base
    return off
