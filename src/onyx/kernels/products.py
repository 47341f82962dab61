"""Float matrix products for the operators (MatMul, Gemm, Attention, ...), with the choice of how
each runs: BLAS on one thread for small products, onyx's own threads for big ones, BLAS's threads for
a GEMV-like product over a big matrix, and the orientation of a product by a weight stored transposed.

Operators pass the session's ``intra_op_num_threads`` (0: the default) and never see the threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onyx.kernels import blas
from onyx.kernels.blas_threads import one_thread
from onyx.kernels.parallel import matmul, pool_threads

#: Products with fewer multiply-adds run with BLAS on one thread (split over onyx's own threads from
#: parallel.GEMM_SPLIT_MACS up): OpenBLAS's thread barriers cost more than they save on these sizes,
#: and on a busy machine each one can wait a whole time slice (a 1x512 @ 512x2048 took 0.1 ms on one
#: thread and 1-16 ms on two). Above this, BLAS threads as the session set them.
SMALL_GEMM_MACS = 1 << 24
#: One row against a matrix of at least this many bytes (an MLP layer at batch 1) is bound by memory
#: bandwidth, which one core cannot fill: BLAS's threads as the session set them (0.58 against 0.79 ms
#: for a 512-2048-512 MLP on two idle cores). 2-8 rows against a wide matrix go to BLAS with the wide
#: matrix as its A operand, on BLAS's threads: 8x512 @ (2048x512)^T 0.45 ms against 0.68 on one thread
#: and 0.82 for two threads in the plain form (an earlier measure saw 7.3 ms there); the MLP at batch
#: 8 1.77-2.36 -> 1.33-1.60 ms (fresh processes, alternating, four rounds).
WIDE_GEMV_BYTES = 1 << 20
#: Up to this many rows of A a product is GEMV-like (see WIDE_GEMV_BYTES).
FEW_ROWS = 8
#: Below this BLAS does not start threads anyway: no need to switch.
TINY_GEMM_MACS = 1 << 14


#: A weight stored transposed (F-contiguous: see onyx.runtime.repack) is multiplied as
#: ``y^T = b^T @ a^T`` and copied back when the inner dimension is at least this deep and the result
#: at most TRANSPOSE_BACK_BYTES: OpenBLAS runs that orientation 20-30% faster with few rows (BERT's
#: 128 x 3072 @ 3072 x 768: 4.5 against 5.7 ms) and the copy back costs little next to it; otherwise
#: ``a @ b`` (BLAS reads the transposed weight in place, as fast as the original).
TRANSPOSE_MIN_DEPTH = 512
TRANSPOSE_BACK_BYTES = 1 << 20


#: A product of at least twice this many multiply-adds, run while its run can be stopped (a RunOptions:
#: ``stop``), runs in blocks of about this many, checking the stop between them: ~30 ms each on two busy
#: cores (a timeout overshoots by 15 ms at the median, 22 at most: bench/README.md, Soak). The blocks
#: cost MKL some speed (a 4096x1024 @ 1024x1024 product 108 -> 144 ms in blocks of 1024 rows), which is
#: why smaller products, and runs without RunOptions, never take them.
BLOCK_MACS = 1 << 30


def product(
    a: np.ndarray, b: np.ndarray, macs: int, *, threads: int = 0, stop: Any = None
) -> np.ndarray:
    """``np.matmul(a, b)`` for float operands of ``macs`` multiply-adds, run the fastest way for its
    shape (see the constants above); ``threads``: the session's ``intra_op_num_threads`` (0: default).
    ``stop`` (the run's RunStop, or None): a huge product runs in blocks (:func:`blocked_product`)."""
    if stop is not None and macs >= 2 * BLOCK_MACS:
        y = blocked_product(a, b, macs, threads, stop)
        if y is not None:
            return y
    if macs < TINY_GEMM_MACS:
        return np.matmul(a, b)
    if b.ndim > 2 and (y := blas.matmul_stack(a, b)) is not None:
        return y  # a stack of products (attention heads): one batch GEMM over BLAS's threads
    if a.ndim == 2 and b.ndim == 2 and 2 <= a.shape[0] <= FEW_ROWS and b.shape[1] >= 256:
        # a few rows against a wide matrix: the wide matrix as BLAS's A operand, on BLAS's threads
        return np.ascontiguousarray(blas.matmul(b.T, a.T).T)
    rows = _flipped(a, b)
    if rows:
        yt = product_t(a, b, macs)
        y = np.empty(a.shape[:-1] + (b.shape[1],), dtype=yt.dtype)
        np.copyto(y.reshape(rows, b.shape[1]), yt.T)
        return y
    if macs >= SMALL_GEMM_MACS or (b.nbytes >= WIDE_GEMV_BYTES and a.size == a.shape[-1]):
        return matmul(a, b, threads=pool_threads(threads))
    with one_thread():
        return blas.matmul(a, b)


def blocked_product(a: np.ndarray, b: np.ndarray, macs: int, threads: int, stop: Any) -> np.ndarray | None:
    """``a @ b`` in blocks of about BLOCK_MACS multiply-adds, ``stop.check`` before each: over rows of
    ``a`` (flattened) for a matrix ``b``, else over the leading batch axis when both have the same batch
    dims; None for the other shapes (broadcast batch dims, 1-D operands). Each block is a product() of
    its own, rows in multiples of 64. The values are the unblocked product's, the bits not always: MKL's
    kernels depend on the row count of a call (a 4100x1000 @ 1000x1031 product differs in the last bits
    in blocks; OpenBLAS's results did not in the shapes tried). Only runs made with a RunOptions take
    this path, and only for products of at least 2 * BLOCK_MACS."""
    if a.ndim < 2 or b.ndim < 2 or a.dtype != b.dtype or a.shape[-1] != b.shape[-2]:
        return None
    if b.ndim == 2:
        k, n = b.shape
        a2 = a.reshape(-1, k)
        rows = a2.shape[0]
        step = max(64, BLOCK_MACS // max(k * n, 1) // 64 * 64)
        if rows <= step:
            return None
        y = np.empty((rows, n), dtype=a.dtype)
        for lo in range(0, rows, step):
            stop.check(f"rows {lo}:{min(lo + step, rows)} of {rows} of a {rows}x{k} @ {k}x{n} product")
            part = a2[lo : lo + step]
            y[lo : lo + step] = product(part, b, part.shape[0] * k * n, threads=threads)
        return y.reshape(a.shape[:-1] + (n,))
    if a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2]:
        return None
    per = macs // max(a.shape[0], 1)
    step = max(1, -(-BLOCK_MACS // max(per, 1)))  # at least a block's worth: stacks run as batch GEMMs
    if a.shape[0] <= step:
        return None
    y = np.empty(a.shape[:-1] + (b.shape[-1],), dtype=a.dtype)
    for lo in range(0, a.shape[0], step):
        stop.check(f"batch {lo}:{min(lo + step, a.shape[0])} of a {list(a.shape)} @ {list(b.shape)} product")
        part = a[lo : lo + step]
        y[lo : lo + step] = product(part, b[lo : lo + step], per * part.shape[0], threads=threads)
    return y


def product_t(a: np.ndarray, b: np.ndarray, macs: int) -> np.ndarray:
    """``(a @ b)^T`` as an (N, rows) array for a 2-D ``b`` (K, N) and ``a`` (..., K) of ``rows`` rows:
    ``b^T @ a^T``, both operands read in place by BLAS (fastest when ``b`` is stored transposed)."""
    k = b.shape[0]
    at = a.reshape(-1, k).T
    if macs >= SMALL_GEMM_MACS or (b.nbytes >= WIDE_GEMV_BYTES and at.shape[1] <= FEW_ROWS):
        return blas.matmul(b.T, at)  # big, or GEMV-like over a big matrix: BLAS's threads (see above)
    with one_thread():
        return blas.matmul(b.T, at)


def flips(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a @ b`` runs faster as ``(b^T @ a^T)^T`` (see TRANSPOSE_MIN_DEPTH)."""
    return _flipped(a, b) > 0


def _flipped(a, b) -> int:
    """The rows of ``a`` when ``a @ b`` should run as ``(b^T @ a^T)^T`` (``b`` a transposed-stored
    matrix, see TRANSPOSE_MIN_DEPTH), else 0."""
    if b.ndim != 2 or a.ndim < 2 or b.strides[0] != b.itemsize or not b.flags.f_contiguous:
        return 0
    if not blas.transposed_weights_pay():
        return 0  # MKL: the plain orientation is faster (ViT 173.4 against 167.0 ms a run)
    k, n = b.shape
    if a.shape[-1] != k:
        return 0  # not a product at all: np.matmul reports it
    rows = a.size // k if k else 0
    if rows <= FEW_ROWS or k < TRANSPOSE_MIN_DEPTH or rows * n * b.itemsize > TRANSPOSE_BACK_BYTES:
        return 0  # a few rows: a GEMV-like product, the rules of product() above apply
    return rows if a.dtype == b.dtype else 0
