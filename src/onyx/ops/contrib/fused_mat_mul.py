"""com.microsoft FusedMatMul: alpha * matmul(A', B') where A' (B') is A (B) with, when
transBatchA (transBatchB), its first axis moved to the second-to-last place, then, when transA
(transB), its last two axes swapped."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import blas
from onyx.ops.contrib._common import back, to_compute
from onyx.ops.registry import op, shape_rule


def _prep(x, trans_batch, trans, name):
    if x.ndim == 1:
        return x
    if trans_batch and x.ndim > 2:
        x = np.moveaxis(x, 0, -2)
    if trans:
        x = np.swapaxes(x, -1, -2)
    return x


@op("FusedMatMul", domain="com.microsoft", since=1)
def fused_mat_mul(A, B, *, alpha=1.0, transA=0, transB=0, transBatchA=0, transBatchB=0):  # noqa: N803
    dtype = A.dtype
    if A.ndim == 0 or B.ndim == 0:
        raise InvalidArgument(f"FusedMatMul: inputs must have rank >= 1, got {A.shape} and {B.shape}")
    a = _prep(to_compute(A), transBatchA, transA, "A")
    b = _prep(to_compute(B), transBatchB, transB, "B")
    try:
        y = blas.matmul(a, b)
    except ValueError:
        raise InvalidArgument(
            f"FusedMatMul: shapes {A.shape} and {B.shape} cannot be multiplied "
            f"(transA={transA}, transB={transB}, transBatchA={transBatchA}, transBatchB={transBatchB})"
        ) from None
    if alpha != 1.0:
        y *= y.dtype.type(alpha)
    return back(np.asarray(y), dtype)


def _dims(s, tb, t):
    if s is None or len(s) < 2:
        return None
    s = list(s)
    if tb and len(s) > 2:
        s = s[1:-1] + [s[0], s[-1]]
    if t:
        s[-1], s[-2] = s[-2], s[-1]
    return s


@shape_rule("FusedMatMul", domain="com.microsoft")
def _shape(ctx):
    a = _dims(ctx.input_shape(0), ctx.attr("transBatchA", 0), ctx.attr("transA", 0))
    b = _dims(ctx.input_shape(1), ctx.attr("transBatchB", 0), ctx.attr("transB", 0))
    if a is None or b is None:
        ctx.set_output(0, ctx.input_elem(0), None)
        return
    ba, bb = a[:-2], b[:-2]
    n = max(len(ba), len(bb))
    ba, bb = [1] * (n - len(ba)) + ba, [1] * (n - len(bb)) + bb
    batch = [y if x == 1 else x for x, y in zip(ba, bb)]
    ctx.set_output(0, ctx.input_elem(0), batch + [a[-2], b[-1]])
