"""Gemm: Y = alpha * A' @ B' + beta * C, A' and B' optionally transposed 2-D matrices.

C broadcasts unidirectionally to (M, N) (opsets 1-6 say so with a ``broadcast`` attribute); it is
optional from opset 11.

How the float product runs (threads, BLAS's threads, orientation) is onyx.kernels.products.product's
choice; this module holds the operator: transposes, alpha and beta, C's broadcast, dtypes.
"""

from onyx.errors import InvalidArgument
from onyx.kernels.products import product
from onyx.ops.math._common import F32, NATIVE_FLOATS
from onyx.ops.math._shape import merge_dim
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


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
        threads, stop = (ctx.intra_op_num_threads, ctx.stop) if ctx is not None else (0, None)
        y = product(a, b, a.shape[0] * a.shape[1] * b.shape[1], threads=threads, stop=stop)
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
