"""com.microsoft GridSample: onnxruntime's contrib GridSample (what torch.onnx exported for
``grid_sample`` before ONNX's GridSample-16), the same semantics as GridSample-16."""

from __future__ import annotations

from onyx.ops.nn._shapes import grid_sample_rule
from onyx.ops.nn.grid_sample import grid_sample_16
from onyx.ops.registry import op, shape_rule


@op("GridSample", domain="com.microsoft", since=1)
def grid_sample(X, Grid, *, align_corners=0, mode="bilinear", padding_mode="zeros"):  # noqa: N803
    return grid_sample_16(X, Grid, align_corners=align_corners, mode=mode, padding_mode=padding_mode)


shape_rule("GridSample", domain="com.microsoft")(grid_sample_rule)
