"""com.microsoft TransposeMatMul: FusedMatMul's older name (alpha, transA, transB)."""

from __future__ import annotations

from onyx.ops.contrib.fused_mat_mul import _shape, fused_mat_mul
from onyx.ops.registry import op, shape_rule


@op("TransposeMatMul", domain="com.microsoft", since=1)
def transpose_mat_mul(A, B, *, alpha=1.0, transA=0, transB=0):  # noqa: N803
    return fused_mat_mul(A, B, alpha=alpha, transA=transA, transB=transB)


shape_rule("TransposeMatMul", domain="com.microsoft")(_shape)
