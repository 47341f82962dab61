"""Gemm: Y = alpha * A' @ B' + beta * C, A' and B' optionally transposed 2-D matrices.

C broadcasts unidirectionally to (M, N) (opsets 1-6 say so with a ``broadcast`` attribute); it is
optional from opset 11.
"""

from onyx.errors import InvalidArgument
from onyx.ops.math._common import F32, NATIVE_FLOATS
from onyx.ops.registry import op


def _scale(y, k):
    if y.dtype.kind in "iu":
        return (y * k).astype(y.dtype)
    y *= k
    return y


def gemm(a, b, c, alpha, beta, trans_a, trans_b):
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
def gemm_1(a, b, c, *, alpha=1.0, beta=1.0, broadcast=0, transA=0, transB=0):  # noqa: N803
    return gemm(a, b, c, alpha, beta, transA, transB)


@op("Gemm", since=7, until=11)
def gemm_7(a, b, c, *, alpha=1.0, beta=1.0, transA=0, transB=0):  # noqa: N803
    return gemm(a, b, c, alpha, beta, transA, transB)


@op("Gemm", since=11)
def gemm_11(a, b, c=None, *, alpha=1.0, beta=1.0, transA=0, transB=0):  # noqa: N803
    return gemm(a, b, c, alpha, beta, transA, transB)
