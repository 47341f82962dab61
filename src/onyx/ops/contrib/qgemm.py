"""com.microsoft QGemm: alpha * (A' - a_zero_point)(B' - b_zero_point) (+ C, int32) of 8-bit operands
(A' = A or A^T by transA, likewise B), exact, then either float32 (times alpha * a_scale * b_scale) or,
when y_scale is given, requantized to y's scale and zero point, as onnxruntime computes it."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops._derived import derived
from onyx.ops.quant import _integer
from onyx.ops.registry import op, shape_rule

OP = "QGemm"


@op("QGemm", domain="com.microsoft", since=1)
def qgemm(
    A, a_scale, a_zero_point, B, b_scale, b_zero_point, C=None, y_scale=None, y_zero_point=None,  # noqa: N803
    *, alpha=1.0, transA=0, transB=0, _ctx=None,  # noqa: N803
):  # fmt: skip
    _integer.check_eight_bit(A, "A", OP)
    _integer.check_eight_bit(B, "B", OP)
    if A.ndim != 2 or B.ndim != 2:
        raise InvalidArgument(f"{OP}: A and B must be 2-D, got {A.shape} and {B.shape}")
    a = A.T if transA else A
    b = B
    if transB:  # a constant weight transposed once per session (onyx.ops._derived)
        b = derived(B, "qgemm_bt", lambda: np.ascontiguousarray(B.T)) if not B.flags.writeable else B.T
    if a.shape[1] != b.shape[0]:
        raise InvalidArgument(f"{OP}: A' {a.shape} and B' {b.shape} cannot be multiplied")
    n = b.shape[1]
    za = _integer.zero_point(a_zero_point, A, "a_zero_point", OP)
    zb = _integer.zero_point(b_zero_point, B, "b_zero_point", OP, n)
    sa = _integer.scale_of(a_scale, "a_scale", OP)
    sb = _integer.scale_of(b_scale, "b_scale", OP, n)
    threads = _integer.threads_of(_ctx)
    acc = _integer.matmul(np.ascontiguousarray(a), b, za, zb, OP, threads)
    if C is not None:
        c = np.asarray(C)
        if c.dtype != np.int32:
            raise InvalidArgument(f"{OP}: C must be int32, got {c.dtype}")
        try:
            acc += c
        except ValueError:
            raise InvalidArgument(f"{OP}: C of shape {c.shape} does not broadcast to {acc.shape}") from None
    scale = (np.float32(alpha) * sa) * sb
    if y_scale is None:
        y = acc.astype(np.float32)
        y *= scale
        return y
    out_dtype, yz = _integer.out_zero_point(y_zero_point, A.dtype, OP)
    mult = scale / _integer.scale_of(y_scale, "y_scale", OP)
    return _integer.requantize_last(acc, mult, yz, out_dtype, threads)


@shape_rule("QGemm", domain="com.microsoft")
def _shape(ctx) -> None:
    a, b = ctx.input_shape(0), ctx.input_shape(3)
    elem = 1 if not ctx.has_input(7) else (ctx.input_elem(8) if ctx.has_input(8) else ctx.input_elem(0))
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        ctx.set_output(0, elem, None)
        return
    m = a[1] if ctx.attr("transA", 0) else a[0]
    n = b[0] if ctx.attr("transB", 0) else b[1]
    ctx.set_output(0, elem, [m, n])
