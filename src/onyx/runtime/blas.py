"""GEMM straight into the BLAS numpy loaded, for what ``np.matmul`` cannot say: an accumulating
``beta`` (C = A @ B + C) and operands that are strided windows of a larger array.

Only OpenBLAS builds are looked for (numpy's wheels bundle one, its symbols suffixed ``64_`` with
64-bit integers); :func:`available` is False anywhere else and callers keep their numpy path.
"""

from __future__ import annotations

import ctypes
from functools import cache

import numpy as np

from onyx.runtime.threads import _openblas_libs

_ROW_MAJOR, _NO_TRANS = 101, 111

#: candidate symbols per element type, 64-bit-integer (ILP64) builds first
_NAMES = {
    np.dtype(np.float32): ("scipy_cblas_sgemm64_", "cblas_sgemm64_", "scipy_cblas_sgemm", "cblas_sgemm"),
    np.dtype(np.float64): ("scipy_cblas_dgemm64_", "cblas_dgemm64_", "scipy_cblas_dgemm", "cblas_dgemm"),
}


@cache
def _gemm(dtype: np.dtype):
    """The cblas ?gemm of ``dtype`` from numpy's OpenBLAS, its argument types set; None if absent."""
    libs = _openblas_libs()
    if not libs:
        return None
    lib = libs[0]  # numpy's own comes first
    for name in _NAMES.get(dtype, ()):
        fn = getattr(lib, name, None)
        if fn is None:
            continue
        idx = ctypes.c_int64 if name.endswith("64_") else ctypes.c_int
        scalar = ctypes.c_float if dtype == np.float32 else ctypes.c_double
        ptr = ctypes.c_void_p
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, idx, idx, idx, scalar, ptr, idx, ptr, idx]
        fn.argtypes += [scalar, ptr, idx]
        fn.restype = None
        return fn
    return None


def available(dtype) -> bool:
    """Whether :func:`gemm` can run for arrays of ``dtype``."""
    return _gemm(np.dtype(dtype)) is not None


def _lead(a: np.ndarray, name: str) -> int:
    """The row stride of a 2-D operand in elements; its rows must be unit-stride."""
    size = a.itemsize
    if a.ndim != 2 or a.strides[1] != size or a.strides[0] % size or a.strides[0] < a.shape[1] * size:
        raise ValueError(f"blas.gemm: {name} of shape {a.shape} and strides {a.strides} is not row-major")
    return max(a.strides[0] // size, a.shape[1], 1)


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray, beta: float = 0.0) -> None:
    """``c[...] = a @ b + beta * c`` for 2-D row-major operands of one float type (rows may be
    windows of wider arrays). ``c`` must be writeable and not overlap ``a`` or ``b``."""
    fn = _gemm(c.dtype)
    if fn is None:
        raise RuntimeError(f"blas.gemm: no BLAS gemm for {c.dtype}")
    m, k = a.shape
    n = b.shape[1]
    if a.dtype != c.dtype or b.dtype != c.dtype or b.shape[0] != k or c.shape != (m, n):
        raise ValueError(f"blas.gemm: shapes {a.shape} @ {b.shape} -> {c.shape} or types do not agree")
    if not c.flags.writeable:
        raise ValueError("blas.gemm: c is read-only")
    if m == 0 or n == 0:
        return
    if k == 0:
        if beta == 0:
            c.fill(0)
        else:
            c *= beta
        return
    lda, ldb, ldc = _lead(a, "a"), _lead(b, "b"), _lead(c, "c")
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    fn(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, m, n, k, 1.0, pa, lda, pb, ldb, beta, pc, ldc)
