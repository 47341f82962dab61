"""com.microsoft GatherND: onnxruntime's contrib GatherND (before ONNX's GatherND-11), ONNX's semantics
with no batch axes; negative indices count from the end."""

from __future__ import annotations

from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor.gather_nd import _gather_nd_shape, gather_nd


@op("GatherND", domain="com.microsoft", since=1)
def gather_nd_ms(data, indices):
    return gather_nd(data, indices, 0)


shape_rule("GatherND", domain="com.microsoft")(_gather_nd_shape)
