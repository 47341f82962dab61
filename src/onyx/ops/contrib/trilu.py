"""com.microsoft Trilu: onnxruntime's contrib version of Trilu (before ONNX's Trilu-14), the same
semantics: keep the upper (``upper=1``) or lower triangle of the last two axes, offset by ``k``."""

from __future__ import annotations

from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor.trilu import _trilu_shape, trilu_14


@op("Trilu", domain="com.microsoft", since=1)
def trilu(X, k=None, *, upper=1):  # noqa: N803
    return trilu_14(X, k, upper=upper)


shape_rule("Trilu", domain="com.microsoft")(_trilu_shape)
