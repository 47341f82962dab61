"""com.microsoft ConvTransposeWithDynamicPads: ConvTranspose whose ``pads`` come from an optional int64
input (computed in the graph) instead of an attribute; the optional bias is the fourth input."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn.conv_transpose import conv_transpose
from onyx.ops.registry import op, shape_rule


@op("ConvTransposeWithDynamicPads", domain="com.microsoft", since=1)
def conv_transpose_with_dynamic_pads(
    X,  # noqa: N803
    W,  # noqa: N803
    Pads=None,  # noqa: N803
    B=None,  # noqa: N803
    *,
    auto_pad="NOTSET",
    dilations=None,
    group=1,
    kernel_shape=None,
    output_padding=None,
    strides=None,
):
    attrs = dict(auto_pad=auto_pad, group=group, output_padding=output_padding)
    for name, value in (("dilations", dilations), ("kernel_shape", kernel_shape), ("strides", strides)):
        if value is not None:
            attrs[name] = value
    if Pads is None:  # optional in the schema, required by onnxruntime's kernel
        raise InvalidArgument("ConvTransposeWithDynamicPads: the dynamic pads tensor (input 2) is required")
    pads = np.asarray(Pads).reshape(-1)
    if pads.size != 2 * (np.asarray(X).ndim - 2):
        raise InvalidArgument(
            f"ConvTransposeWithDynamicPads: Pads has {pads.size} values for {np.asarray(X).ndim - 2} "
            "spatial axes (two per axis expected)"
        )
    attrs["pads"] = [int(p) for p in pads]
    return conv_transpose(X, W, B, **attrs)


@shape_rule("ConvTransposeWithDynamicPads", domain="com.microsoft")
def _shape(ctx) -> None:
    x = ctx.input_shape(0)
    w = ctx.input_shape(1)
    dims = None
    if x is not None and w is not None and len(x) == len(w):
        dims = [x[0], w[1] * ctx.attr("group", 1) if isinstance(w[1], int) else None] + [None] * (len(x) - 2)
    ctx.set_output(0, ctx.input_elem(0), dims)
