"""Gemm: Y = alpha * A' @ B' + beta * C, A' and B' optionally transposed 2-D matrices.

C broadcasts unidirectionally to (M, N) (opsets 1-6 say so with a ``broadcast`` attribute); it is
optional from opset 11.
"""

from contextlib import contextmanager

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.math._common import F32, NATIVE_FLOATS
from onyx.ops.math._shape import merge_dim
from onyx.ops.registry import op, shape_rule
from onyx.runtime import blas
from onyx.runtime.threads import get_blas_threads, intra_op_threads, matmul, set_blas_threads
from onyx.shape_inference import ShapeContext

#: Products with fewer multiply-adds run with BLAS on one thread (split over onyx's own threads from
#: threads.GEMM_SPLIT_MACS up): OpenBLAS's thread barriers cost more than they save on these sizes,
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
_FEW_ROWS = 8
#: Below this BLAS does not start threads anyway: no need to switch.
_TINY_GEMM_MACS = 1 << 14


#: A weight stored transposed (F-contiguous: see onyx.runtime.repack) is multiplied as
#: ``y^T = b^T @ a^T`` and copied back when the inner dimension is at least this deep and the result
#: at most TRANSPOSE_BACK_BYTES: OpenBLAS runs that orientation 20-30% faster with few rows (BERT's
#: 128 x 3072 @ 3072 x 768: 4.5 against 5.7 ms) and the copy back costs little next to it; otherwise
#: ``a @ b`` (BLAS reads the transposed weight in place, as fast as the original).
TRANSPOSE_MIN_DEPTH = 512
TRANSPOSE_BACK_BYTES = 1 << 20


def product(a, b, macs: int, threads: int | None = None):
    """``np.matmul(a, b)`` for float operands, small products on a single-threaded BLAS."""
    if macs < _TINY_GEMM_MACS:
        return np.matmul(a, b)
    if b.ndim > 2 and (y := blas.matmul_stack(a, b)) is not None:
        return y  # a stack of products (attention heads): one batch GEMM over BLAS's threads
    if a.ndim == 2 and b.ndim == 2 and 2 <= a.shape[0] <= _FEW_ROWS and b.shape[1] >= 256:
        # a few rows against a wide matrix: the wide matrix as BLAS's A operand, on BLAS's threads
        return np.ascontiguousarray(blas.matmul(b.T, a.T).T)
    rows = _flipped(a, b)
    if rows:
        yt = product_t(a, b, macs)
        y = np.empty(a.shape[:-1] + (b.shape[1],), dtype=yt.dtype)
        np.copyto(y.reshape(rows, b.shape[1]), yt.T)
        return y
    if macs >= SMALL_GEMM_MACS or (b.nbytes >= WIDE_GEMV_BYTES and a.size == a.shape[-1]):
        return matmul(a, b, threads=threads)
    with _one_blas_thread():
        return blas.matmul(a, b)


def product_t(a, b, macs: int):
    """``(a @ b)^T`` as an (N, rows) array for a 2-D ``b`` (K, N) and ``a`` (..., K) of ``rows`` rows:
    ``b^T @ a^T``, both operands read in place by BLAS (fastest when ``b`` is stored transposed)."""
    k = b.shape[0]
    at = a.reshape(-1, k).T
    if macs >= SMALL_GEMM_MACS or (b.nbytes >= WIDE_GEMV_BYTES and at.shape[1] <= _FEW_ROWS):
        return blas.matmul(b.T, at)  # big, or GEMV-like over a big matrix: BLAS's threads (see above)
    with _one_blas_thread():
        return blas.matmul(b.T, at)


def flips(a, b) -> bool:
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
    if rows <= _FEW_ROWS or k < TRANSPOSE_MIN_DEPTH or rows * n * b.itemsize > TRANSPOSE_BACK_BYTES:
        return 0  # a few rows: a GEMV-like product, the rules of product() above apply
    return rows if a.dtype == b.dtype else 0


@contextmanager
def _one_blas_thread():
    """BLAS on one thread for the duration (see SMALL_GEMM_MACS)."""
    before = get_blas_threads()
    if before is not None and before != 1:
        set_blas_threads(1)
    try:
        yield
    finally:
        if before is not None and before != 1:
            set_blas_threads(before)


def _scale(y, k):
    if y.dtype.kind in "iu":
        return (y * k).astype(y.dtype)
    y *= k
    return y


def gemm(a, b, c, alpha, beta, trans_a, trans_b, ctx=None):
    if a.ndim != 2 or b.ndim != 2:
        raise InvalidArgument(f"Gemm: A {a.shape} and B {b.shape} must be 2-D")
    dt = a.dtype
    if dt not in NATIVE_FLOATS and dt.kind not in "iu":
        a = a.astype(F32)
        b = b.astype(F32)
        if c is not None:
            c = c.astype(F32)
    if trans_a:
        a = a.T
    if trans_b:
        b = b.T
    if a.shape[1] != b.shape[0]:
        raise InvalidArgument(
            f"Gemm: A' {a.shape} and B' {b.shape} do not chain (transA={trans_a}, transB={trans_b})"
        )
    if a.dtype.kind == "f":
        y = product(a, b, a.shape[0] * a.shape[1] * b.shape[1], intra_op_threads(ctx))
    else:
        y = a @ b
    if alpha != 1.0:
        y = _scale(y, alpha)
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = c * beta if c.dtype.kind not in "iu" else (c * beta).astype(c.dtype)
        try:
            y += c
        except ValueError:
            raise InvalidArgument(f"Gemm: C {c.shape} does not broadcast to the result {y.shape}") from None
    return y if y.dtype == dt else y.astype(dt)


@op("Gemm", since=1, until=7)
def gemm_1(a, b, c, *, alpha=1.0, beta=1.0, broadcast=0, transA=0, transB=0, _ctx=None):  # noqa: N803
    return gemm(a, b, c, alpha, beta, transA, transB, _ctx)


@op("Gemm", since=7, until=11)
def gemm_7(a, b, c, *, alpha=1.0, beta=1.0, transA=0, transB=0, _ctx=None):  # noqa: N803
    return gemm(a, b, c, alpha, beta, transA, transB, _ctx)


@op("Gemm", since=11)
def gemm_11(a, b, c=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, _ctx=None):  # noqa: N803
    return gemm(a, b, c, alpha, beta, transA, transB, _ctx)


@shape_rule("Gemm")
def _gemm_shape(ctx: ShapeContext) -> None:
    """[M, K] x [K, N] -> [M, N] after transA/transB; a static C dim other than 1 fixes M or N."""
    a, b = ctx.input_shape(0), ctx.input_shape(1)
    m = ka = kb = n = None
    if a is not None:
        if len(a) != 2:
            ctx.fail(f"A must be 2-D, got {a}")
        ka, m = a if ctx.attr("transA", 0) else reversed(a)
    if b is not None:
        if len(b) != 2:
            ctx.fail(f"B must be 2-D, got {b}")
        n, kb = b if ctx.attr("transB", 0) else reversed(b)
    merge_dim(ctx, ka, kb, f"inner dims of A {a} and B {b} (transA/transB applied)")
    c = ctx.input_shape(2)
    if c is not None:
        if len(c) > 2:
            ctx.fail(f"C {c} does not broadcast to [M, N]")
        cc = [1] * (2 - len(c)) + c
        out = []
        for d, cd, what in ((m, cc[0], "M"), (n, cc[1], "N")):
            if isinstance(cd, int) and cd != 1:
                d = merge_dim(ctx, d, cd, f"C {c} against {what}")
            out.append(d)
        m, n = out
    ctx.set_output(0, ctx.input_elem(0), [m, n])
