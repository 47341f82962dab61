"""SparseTensor of onnxruntime's Python API: COO or CSR(C) over numpy arrays, without copying them.

onyx's kernels compute on dense arrays: a sparse feed is made dense when a session runs (for an input
declared ``sparse_tensor(...)``), and an output the model declares sparse comes back as a COO SparseTensor.
"""

from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np

from onyx.errors import Fail, InvalidArgument
from onyx.ir.dtypes import from_numpy


class OrtSparseFormat(enum.IntEnum):
    ORT_SPARSE_UNDEFINED = 0
    ORT_SPARSE_COO = 1
    ORT_SPARSE_CSRC = 2
    ORT_SPARSE_BLOCK_SPARSE = 4


class SparseCooView:
    """The COO indices: linear (nnz,) or coordinates (nnz, rank)."""

    def __init__(self, indices: np.ndarray):
        self._indices = indices

    def indices(self) -> np.ndarray:
        return self._indices


class SparseCsrView:
    """The CSR(C) indices: ``inner()`` column of each value, ``outer()`` row starts (rows + 1)."""

    def __init__(self, inner: np.ndarray, outer: np.ndarray):
        self._inner = inner
        self._outer = outer

    def inner(self) -> np.ndarray:
        return self._inner

    def outer(self) -> np.ndarray:
        return self._outer


class SparseBlockSparseView:
    def __init__(self, indices: np.ndarray):
        self._indices = indices

    def indices(self) -> np.ndarray:
        return self._indices


def _int64(name: str, a: Any) -> np.ndarray:
    arr = np.asarray(a)
    if arr.dtype != np.int64:
        if arr.size and arr.dtype.kind not in "iu":
            raise InvalidArgument(f"{name} must be int64, got {arr.dtype}")
        arr = arr.astype(np.int64)
    return np.ascontiguousarray(arr)


def _values(values: Any) -> np.ndarray:
    if not isinstance(values, np.ndarray):
        raise InvalidArgument(f"values must be a numpy.ndarray, got {type(values).__name__}")
    if values.ndim != 1:
        raise InvalidArgument(f"values must be 1-D, got shape {list(values.shape)}")
    if values.dtype.kind in "US":
        values = values.astype(object)
    from_numpy(values.dtype)  # an ONNX element type, or InvalidArgument
    return np.ascontiguousarray(values)


class SparseTensor:
    """A sparse tensor: dense shape, the non-zero values, and COO or CSR(C) indices."""

    def __init__(
        self,
        fmt: OrtSparseFormat,
        dense_shape: Any,
        values: np.ndarray,
        indices: tuple[np.ndarray, ...],
        owners: tuple = (),
    ):
        self._format = OrtSparseFormat(fmt)
        self._dense_shape = _int64("dense_shape", dense_shape).reshape(-1)
        self._values = values
        self._indices = indices
        self._owners = owners  # the caller's arrays whose memory the views use

    # -- factories ----------------------------------------------------------------------------------
    @classmethod
    def sparse_coo_from_numpy(
        cls, dense_shape: Any, values: np.ndarray, coo_indices: np.ndarray, ort_device: Any = None
    ) -> SparseTensor:
        """COO: ``coo_indices`` linear (nnz,) or coordinates (nnz, rank), int64."""
        _check_device(ort_device)
        vals = _values(values)
        idx = _int64("coo_indices", coo_indices)
        shape = _int64("dense_shape", dense_shape).reshape(-1)
        nnz = vals.size
        if idx.ndim == 1 and idx.size == nnz:
            bound = math.prod(int(d) for d in shape)
            if nnz and (idx.min() < 0 or idx.max() >= bound):
                raise InvalidArgument(f"coo_indices out of range for dense shape {shape.tolist()}")
        elif idx.size == 2 * nnz and len(shape) == 2:
            idx = idx.reshape(nnz, 2)
            if nnz and (idx.min() < 0 or (idx >= shape[None, :]).any()):
                raise InvalidArgument(f"coo_indices out of range for dense shape {shape.tolist()}")
        else:
            raise InvalidArgument(
                f"Index size: {idx.size} must be equal to or twice the values size: {nnz} "
                f"(twice only for a 2-D dense shape, got {shape.tolist()})"
            )
        return cls(OrtSparseFormat.ORT_SPARSE_COO, shape, vals, (idx,), (values, coo_indices))

    @classmethod
    def sparse_csr_from_numpy(
        cls,
        dense_shape: Any,
        values: np.ndarray,
        inner_indices: np.ndarray,
        outer_indices: np.ndarray,
        ort_device: Any = None,
    ) -> SparseTensor:
        """CSR: ``inner_indices`` the column of each value, ``outer_indices`` the row starts (rows + 1)."""
        _check_device(ort_device)
        vals = _values(values)
        inner = _int64("inner_indices", inner_indices).reshape(-1)
        outer = _int64("outer_indices", outer_indices).reshape(-1)
        shape = _int64("dense_shape", dense_shape).reshape(-1)
        if len(shape) != 2:
            raise InvalidArgument(f"CSR: dense shape must be 2-D. Got: {len(shape)}")
        rows, cols = int(shape[0]), int(shape[1])
        if inner.size != vals.size:
            raise InvalidArgument(f"CSR: {inner.size} inner indices for {vals.size} values")
        if outer.size not in (0, rows + 1):
            raise InvalidArgument(
                f"CSR: Outer index count must be rows + 1 or zero. Got: {outer.size} rows: {rows}"
            )
        if outer.size and (outer[0] != 0 or outer[-1] != vals.size or (np.diff(outer) < 0).any()):
            raise InvalidArgument("CSR: outer indices must rise from 0 to the number of values")
        if inner.size and (inner.min() < 0 or inner.max() >= cols):
            raise InvalidArgument(f"CSR: inner indices out of range for {cols} columns")
        return cls(
            OrtSparseFormat.ORT_SPARSE_CSRC,
            shape,
            vals,
            (inner, outer),
            (values, inner_indices, outer_indices),
        )

    @classmethod
    def from_dense(cls, dense: np.ndarray) -> SparseTensor:
        """COO of a dense array's non-zero elements (linear indices)."""
        flat = np.ascontiguousarray(dense).reshape(-1)
        nz = np.flatnonzero(flat != 0) if flat.dtype != np.dtype(object) else np.flatnonzero(flat != "")
        return cls(OrtSparseFormat.ORT_SPARSE_COO, list(dense.shape), flat[nz], (nz.astype(np.int64),))

    # -- accessors ----------------------------------------------------------------------------------
    def values(self) -> np.ndarray:
        return self._values

    def as_coo_view(self) -> SparseCooView:
        if self._format != OrtSparseFormat.ORT_SPARSE_COO:
            raise Fail(f"This sparse tensor does not contain COO format (it is {self._format.name})")
        return SparseCooView(self._indices[0])

    def as_csrc_view(self) -> SparseCsrView:
        if self._format != OrtSparseFormat.ORT_SPARSE_CSRC:
            raise Fail(f"This sparse tensor does not contain CSR(C) format (it is {self._format.name})")
        return SparseCsrView(*self._indices)

    def as_blocksparse_view(self) -> SparseBlockSparseView:
        raise Fail(f"This sparse tensor does not contain BlockSparse format (it is {self._format.name})")

    def to_cuda(self, ort_device: Any) -> SparseTensor:
        from onyx.errors import EPFail

        raise EPFail("Cuda is not available in this build: onyx runs on the CPU only")

    def format(self) -> OrtSparseFormat:
        return self._format

    def dense_shape(self) -> np.ndarray:
        return self._dense_shape

    def data_type(self) -> str:
        return f"sparse_tensor({from_numpy(self._values.dtype).onnx_name})"

    def device_name(self) -> str:
        return "cpu"

    def _get_c_tensor(self) -> SparseTensor:
        return self

    def to_dense(self) -> np.ndarray:
        """The dense array (what onyx's kernels compute on)."""
        shape = tuple(int(d) for d in self._dense_shape)
        vals = self._values
        out = (
            np.zeros(shape, dtype=vals.dtype)
            if vals.dtype != np.dtype(object)
            else np.full(shape, "", object)
        )
        if self._format == OrtSparseFormat.ORT_SPARSE_COO:
            idx = self._indices[0]
            if idx.ndim == 2:
                out[tuple(idx.T)] = vals
            else:
                out.reshape(-1)[idx] = vals
        else:
            inner, outer = self._indices
            if outer.size:
                rows = np.repeat(np.arange(shape[0]), np.diff(outer))
                out[rows, inner] = vals
        return out

    def __repr__(self) -> str:
        return (
            f"SparseTensor({self._format.name}, {self.data_type()}, dense_shape={self._dense_shape.tolist()})"
        )


def _check_device(ort_device: Any) -> None:
    if ort_device is None:
        return
    from onyx.runtime.ortvalue import check_cpu

    check_cpu(ort_device)


__all__ = ["SparseTensor", "OrtSparseFormat", "SparseCooView", "SparseCsrView", "SparseBlockSparseView"]
