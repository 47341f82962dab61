"""GEMM straight into the BLAS numpy loaded, for what ``np.matmul`` cannot say: an accumulating
``beta`` (C = A @ B + C), operands that are strided windows of a larger array, and a stack of
products in one call (:func:`matmul_stack`, OpenBLAS's ``?gemm_batch_strided``).

Only OpenBLAS builds are looked for (numpy's wheels bundle one, its symbols suffixed ``64_`` with
64-bit integers); :func:`available` is False anywhere else and callers keep their numpy path.
"""

from __future__ import annotations

import ctypes
import math
import platform
from functools import cache

import numpy as np

from onyx.kernels import mkl
from onyx.kernels.blas_threads import openblas_libraries

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

#: candidate symbols per element type, 64-bit-integer (ILP64) builds first
_NAMES = {
    np.dtype(np.float32): ("scipy_cblas_sgemm64_", "cblas_sgemm64_", "scipy_cblas_sgemm", "cblas_sgemm"),
    np.dtype(np.float64): ("scipy_cblas_dgemm64_", "cblas_dgemm64_", "scipy_cblas_dgemm", "cblas_dgemm"),
}


#: the strided batch GEMM (OpenBLAS 0.3.30+); numpy's build left it unprefixed, so its integer width
#: is the library's (64-bit where the plain gemm carries the ``64_`` suffix)
_BATCH_NAMES = {
    np.dtype(np.float32): (
        "scipy_cblas_sgemm_batch_strided64_",
        "cblas_sgemm_batch_strided64_",
        "cblas_sgemm_batch_strided",
    ),
    np.dtype(np.float64): (
        "scipy_cblas_dgemm_batch_strided64_",
        "cblas_dgemm_batch_strided64_",
        "cblas_dgemm_batch_strided",
    ),
}


#: products of at most this many multiply-adds per matrix (m * n * k) take OpenBLAS's small-matrix
#: kernels, which its batch GEMM reaches through a table DYNAMIC_ARCH builds (numpy's) leave unset:
#: a segfault up to 0.3.31 (OpenMathLib/OpenBLAS#5980; measured here on every transpose and both
#: types, 100 x 100 x 100 crashing and 100 x 100 x 101 not). Smaller products keep numpy's loop.
_SMALL_MATRIX_MNK = 100**3
#: above this many multiply-adds per matrix numpy's loop, each product on all of BLAS's threads, is as
#: fast or faster (8 x 128 x 768 x 768: 5.9 against 7.1 ms; 12 x 512 x 64 x 512: 3.0 against 1.9)
_BATCH_MAX_MNK = 1 << 24


#: with MKL (no small-matrix bug): products of more multiply-adds than this go in one batch call (fewer:
#: numpy's loop, whose per-call cost is lower than ctypes' argument conversion) ...
_MKL_BATCH_MIN_MNK = 1 << 12
#: ... and of at most this many
_MKL_BATCH_MAX_MNK = 1 << 62


def _int_type(lib, dtype: np.dtype):
    """The BLAS integer of ``lib``: 64-bit when its gemm symbol is the ILP64 one, else None if it has
    no gemm for ``dtype``."""
    for name in _NAMES.get(dtype, ()):
        if getattr(lib, name, None) is not None:
            return ctypes.c_int64 if name.endswith("64_") else ctypes.c_int
    return None


_CHAR = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}


def _from_mkl(getter, dtype: np.dtype):
    """MKL's function of ``dtype`` from ``getter`` (mkl.gemm_function, ...), or None."""
    return getter(_CHAR[dtype]) if dtype in _CHAR else None


@cache
def _gemm(dtype: np.dtype):
    """The cblas ?gemm of ``dtype``: MKL's where it is onyx's BLAS (onyx.kernels.mkl), else numpy's
    OpenBLAS's, its argument types set; None if absent."""
    if (fn := _from_mkl(mkl.gemm_function, dtype)) is not None:
        return fn
    libs = openblas_libraries()
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


def _ints_fit(fn, *values) -> bool:
    """Whether every integer argument fits ``fn``'s BLAS integer (MKL's LP64 interface: 32 bits;
    ctypes would wrap a larger value silently)."""
    return fn.argtypes[3] is not ctypes.c_int or max(values) < 2**31


def transposed_weights_pay() -> bool:
    """Whether GEMM weights are worth storing transposed and products flipping to ``(w^T @ x^T)^T``
    (onyx.runtime.repack, onyx.kernels.products.product): on numpy's OpenBLAS, not on MKL (asked
    without loading MKL, so that a session's creation does not pay for it)."""
    return not mkl.expected()


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
    if not _ints_fit(fn, m, n, k, lda, ldb, ldc):
        raise ValueError(f"blas.gemm: {a.shape} @ {b.shape} exceeds the BLAS's 32-bit dimensions")
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    fn(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, m, n, k, 1.0, pa, lda, pb, ldb, beta, pc, ldc)


@cache
def _gemm_batch(dtype: np.dtype):
    """The cblas ?gemm_batch_strided of ``dtype``: MKL's where it is onyx's BLAS, else numpy's
    OpenBLAS's, its argument types set; None if absent."""
    if (fn := _from_mkl(mkl.gemm_batch_function, dtype)) is not None:
        return fn
    libs = openblas_libraries()
    if not libs or platform.machine().lower() not in ("x86_64", "amd64"):
        return None  # other architectures' small-matrix kernels have other bounds (see above)
    lib = libs[0]
    idx = _int_type(lib, dtype)
    if idx is None:
        return None
    for name in _BATCH_NAMES.get(dtype, ()):
        fn = getattr(lib, name, None)
        if fn is None:
            continue
        scalar = ctypes.c_float if dtype == np.float32 else ctypes.c_double
        ptr, i3 = ctypes.c_void_p, [idx] * 3
        fn.argtypes = (
            [ctypes.c_int] * 3 + i3 + [scalar, ptr, idx, idx, ptr, idx, idx, scalar, ptr, idx, idx, idx]
        )
        fn.restype = None
        return fn
    return None


def _layout(x: np.ndarray) -> tuple[int, int] | None:
    """(transpose flag, leading dimension in elements) of the matrices of ``x`` (its last two axes) when
    their rows or columns are unit-stride, or None when BLAS cannot read them in place."""
    size = x.itemsize
    rows, cols = x.shape[-2:]
    s0, s1 = x.strides[-2:]
    if s0 % size or s1 % size:
        return None
    s0, s1 = s0 // size, s1 // size
    if s1 == 1 or cols == 1:  # row-major (a single row or column has any stride on its other axis)
        ld = max(cols, 1) if rows == 1 else s0
        if ld >= max(cols, 1):
            return _NO_TRANS, ld
    if s0 == 1 or rows == 1:  # column-major: the transpose of a row-major matrix
        ld = max(rows, 1) if cols == 1 else s1
        if ld >= max(rows, 1):
            return _TRANS, ld
    return None


def _flat_from(x: np.ndarray, nbatch: int) -> int:
    """The first of the ``nbatch`` leading axes of ``x`` from which the batch axes flatten to one
    non-negative stride (axes of length 1 do not count)."""
    start = nbatch
    inner = None  # (length, stride) of the last axis kept so far
    for axis in range(nbatch - 1, -1, -1):
        d, st = x.shape[axis], x.strides[axis]
        if d == 1:
            start = axis
            continue
        if st < 0 or st % x.itemsize or (inner is not None and st != inner[0] * inner[1]):
            break
        inner = (d, st)
        start = axis
    return start


def _inner_stride(x: np.ndarray, start: int, nbatch: int) -> int:
    """The one stride (elements) of ``x``'s batch axes ``start:nbatch`` (see _flat_from)."""
    kept = [x.strides[i] for i in range(start, nbatch) if x.shape[i] != 1]
    return kept[-1] // x.itemsize if kept else 0


def matmul_stack(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """``np.matmul(a, b)`` for stacks of matrices (rank >= 3 on either side, batch dims broadcast) of
    one float type, as one strided batch GEMM: OpenBLAS spreads the products over its threads, each
    product on one (12 attention heads of 128 x 64 @ 64 x 128: 1.6-1.8x numpy's loop of calls). Only
    for two or more products of 1e6 to 2^24 multiply-adds each (see the bounds above).
    Operands are read in place where each matrix has unit-stride rows or columns; batch axes that do
    not flatten to one stride (the heads of several images in one projection) are looped over, a call
    each. Returns None otherwise (and without the BLAS function), for the caller's numpy path."""
    dtype = a.dtype
    if dtype != b.dtype or a.ndim < 2 or b.ndim < 2 or max(a.ndim, b.ndim) < 3:
        return None
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if b.shape[-2] != k:
        return None
    low, high = (
        (_MKL_BATCH_MIN_MNK, _MKL_BATCH_MAX_MNK) if mkl.active() else (_SMALL_MATRIX_MNK, _BATCH_MAX_MNK)
    )
    if not low < m * n * k <= high:
        return None
    fn = _gemm_batch(dtype)
    if fn is None:
        return None
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    count = math.prod(batch)
    if count < 2:
        return None
    va = np.broadcast_to(a, batch + (m, k))
    vb = np.broadcast_to(b, batch + (k, n))
    la, lb = _layout(va), _layout(vb)
    if la is None or lb is None:
        return None
    nb = len(batch)
    start = max(_flat_from(va, nb), _flat_from(vb, nb))
    inner = math.prod(batch[start:])
    if inner < 2:
        return None  # heads of a batch laid out apart (one call per image) but one head each
    sa, sb = _inner_stride(va, start, nb), _inner_stride(vb, start, nb)
    (ta, lda), (tb, ldb) = la, lb
    if not _ints_fit(fn, m, n, k, lda, ldb, sa, sb, m * n, inner):
        return None
    out = np.empty(batch + (m, n), dtype=dtype)
    pa, pb, pc = va.ctypes.data, vb.ctypes.data, out.ctypes.data
    step = inner * m * n * out.itemsize
    for i, outer in enumerate(np.ndindex(*batch[:start])):
        oa = sum(o * st for o, st in zip(outer, va.strides))
        ob = sum(o * st for o, st in zip(outer, vb.strides))
        fn(
            _ROW_MAJOR,
            ta,
            tb,
            m,
            n,
            k,
            1.0,
            pa + oa,
            lda,
            sa,
            pb + ob,
            ldb,
            sb,
            0.0,
            pc + i * step,
            n,
            m * n,
            inner,
        )
    return out


def gemm_taps(a: np.ndarray, bases: list, starts: list, c: np.ndarray) -> None:
    """``c[...] = sum_t a[t] @ bases[t][:, starts[t] : starts[t] + N]`` for a C-contiguous stack ``a``
    (T, M, K), row-major (K, width) ``bases`` and a C-contiguous (M, N) ``c``: a convolution's GEMM per
    kernel offset over windows of its phase planes. Checked once, then one cblas call per term with
    pointers computed here (``gemm`` checks and converts every operand on each call: 8 against 2.5 us
    for a small product)."""
    fn = _gemm(c.dtype)
    if fn is None:
        raise RuntimeError(f"blas.gemm_taps: no BLAS gemm for {c.dtype}")
    terms, m, k = a.shape
    n = c.shape[1]
    if (
        a.dtype != c.dtype
        or not a.flags.c_contiguous
        or not c.flags.c_contiguous
        or not c.flags.writeable
        or c.shape[0] != m
        or len(bases) != terms
        or len(starts) != terms
    ):
        raise ValueError(f"blas.gemm_taps: {a.shape} terms into {c.shape} do not agree")
    size = c.itemsize
    ptrs = {}
    for base, start in zip(bases, starts):
        if (
            base.dtype != c.dtype
            or base.ndim != 2
            or base.shape[0] != k
            or not base.flags.c_contiguous
            or not 0 <= start <= base.shape[1] - n
        ):
            raise ValueError(f"blas.gemm_taps: window {start}:{start + n} of {base.shape} does not fit")
        if id(base) not in ptrs:
            ptrs[id(base)] = base.ctypes.data
    if m == 0 or n == 0:
        return
    if k == 0:
        c.fill(0)
        return
    if not _ints_fit(fn, m, n, k, max(base.shape[1] for base in bases)):
        raise ValueError(
            f"blas.gemm_taps: {a.shape} terms into {c.shape} exceed the BLAS's 32-bit dimensions"
        )
    pa, pc, step = a.ctypes.data, c.ctypes.data, m * k * size
    for t, (base, start) in enumerate(zip(bases, starts)):
        pb = ptrs[id(base)] + start * size
        fn(
            _ROW_MAJOR,
            _NO_TRANS,
            _NO_TRANS,
            m,
            n,
            k,
            1.0,
            pa + t * step,
            k,
            pb,
            base.shape[1],
            1.0 if t else 0.0,
            pc,
            n,
        )


#: fewer multiply-adds than this: numpy's call (its per-call cost is below ctypes' conversions)
_MATMUL_MIN_MACS = 1 << 15


def matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)``, on MKL where it is onyx's BLAS (see onyx.kernels.mkl) and the
    operands allow: float32/float64 of one type, ``b`` a matrix (or a stack of one) whose rows or
    columns are unit-stride, ``a`` a matrix of that kind or a C-contiguous stack of rows, ``out`` (if
    given) C-contiguous or a row-major matrix; stacks of several big products one call each. Anything
    else, and every product when numpy's OpenBLAS is onyx's BLAS, is ``np.matmul``'s."""
    return _matmul(a, b, out)


def _matmul(a, b, out):
    """:func:`matmul` (called per product by _matmul_each without passing through the public name)."""
    if (
        type(a) is not np.ndarray
        or type(b) is not np.ndarray
        or b.ndim < 2
        or a.ndim < 2
        or a.dtype != b.dtype
        or a.dtype not in _CHAR
        or not mkl.active()
    ):
        return np.matmul(a, b, out=out)
    k, n = b.shape[-2:]
    if a.shape[-1] != k:
        return np.matmul(a, b, out=out)  # numpy reports the mismatch
    if b.ndim > 2 and (b.size != k * n or a.size != a.shape[-2] * k):
        return _matmul_each(a, b, out)  # stacks of several matrices
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], n)
    m = math.prod(shape[:-1])
    if m * n * k < _MATMUL_MIN_MACS or (a.ndim > 2 and not a.flags.c_contiguous):
        return np.matmul(a, b, out=out)
    a2, b2 = a.reshape(m, k), b.reshape(k, n)  # views: a is 2-D or C-contiguous, b one matrix
    la, lb = _layout(a2), _layout(b2)
    if la is None or lb is None:
        return np.matmul(a, b, out=out)
    if out is None:
        out = np.empty(shape, dtype=a.dtype)
        c, ldc = out.reshape(m, n), n
    else:
        if out.shape != shape or out.dtype != a.dtype or not out.flags.writeable:
            return np.matmul(a, b, out=out)
        if out.flags.c_contiguous:
            c, ldc = out.reshape(m, n), n
        elif out.ndim == 2 and (lc := _layout(out)) is not None and lc[0] == _NO_TRANS:
            c, ldc = out, lc[1]
        else:
            return np.matmul(a, b, out=out)
        if np.may_share_memory(out, a) or np.may_share_memory(out, b):
            return np.matmul(a, b, out=out)
    if m == 0 or n == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    (ta, lda), (tb, ldb) = la, lb
    fn = _gemm(a.dtype)
    if not _ints_fit(fn, m, n, k, lda, ldb, ldc):
        return np.matmul(a, b, out=out)
    pa, pb, pc = a2.ctypes.data, b2.ctypes.data, c.ctypes.data
    fn(_ROW_MAJOR, ta, tb, m, n, k, 1.0, pa, lda, pb, ldb, 0.0, pc, ldc)
    return out


#: stacks of at most this many products go to MKL one product a call (see _matmul_each)
_EACH_MAX = 64


def _matmul_each(a, b, out):
    """``np.matmul`` of stacks, one :func:`matmul` per product when each is big enough for BLAS's threads
    (the images of a batched convolution's column GEMM: numpy's loop would run them on numpy's
    OpenBLAS, left one thread while MKL is onyx's BLAS); numpy's loop otherwise."""
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return np.matmul(a, b, out=out)  # numpy reports it
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    count = math.prod(batch)
    shape = batch + (m, n)
    if count > _EACH_MAX or m * n * k < GEMM_EACH_MIN_MACS or (out is not None and out.shape != shape):
        return np.matmul(a, b, out=out)
    if out is None:
        out = np.empty(shape, dtype=np.result_type(a, b))
    va, vb = np.broadcast_to(a, batch + (m, k)), np.broadcast_to(b, batch + (k, n))
    for idx in np.ndindex(*batch):
        _matmul(va[idx], vb[idx], out[idx])
    return out


#: fewest multiply-adds per product for _matmul_each to call BLAS per product
GEMM_EACH_MIN_MACS = 1 << 20
