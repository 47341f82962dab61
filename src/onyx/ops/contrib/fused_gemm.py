"""com.microsoft FusedGemm: Gemm followed by an activation (``activation_alpha/beta/gamma`` its
parameters)."""

from onyx.ops.contrib._common import activate_, back, to_compute
from onyx.ops.linalg.gemm import gemm
from onyx.ops.registry import op, shape_rule


@op("FusedGemm", domain="com.microsoft", since=1)
def fused_gemm(
    A,  # noqa: N803
    B,  # noqa: N803
    C=None,  # noqa: N803
    *,
    alpha=1.0,
    beta=1.0,
    transA=0,  # noqa: N803
    transB=0,  # noqa: N803
    activation="",
    activation_alpha=None,
    activation_beta=None,
    activation_gamma=None,
):
    dtype = A.dtype
    y = to_compute(gemm(A, B, C, alpha, beta, transA, transB))
    if y.dtype == dtype:
        y = y.copy() if not y.flags.writeable else y
    if activation:
        params = [p for p in (activation_alpha, activation_beta, activation_gamma) if p is not None]
        if activation == "HardSigmoid" and activation_alpha is None:
            params = [0.2, 0.5 if activation_beta is None else activation_beta]
        y = activate_(y, activation, params, "FusedGemm")
    return back(y, dtype)


@shape_rule("FusedGemm", domain="com.microsoft")
def _shape(ctx):
    a, b = ctx.input_shape(0), ctx.input_shape(1)
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        ctx.set_output(0, ctx.input_elem(0), None)
        return
    m = a[1] if ctx.attr("transA", 0) else a[0]
    n = b[0] if ctx.attr("transB", 0) else b[1]
    ctx.set_output(0, ctx.input_elem(0), [m, n])
