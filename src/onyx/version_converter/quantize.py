"""QuantizeLinear and DequantizeLinear: per-axis scales (``axis``) arrived at 13, blocked ones
(``block_size``) at 21. Going below 13 needs a per-tensor (one-element) scale; ``block_size`` and the
other later attributes fall back to the generic rule (dropped when they hold their default)."""

from __future__ import annotations

from onyx.ir.model import Node
from onyx.version_converter._core import Converter, adapter, fail


def _axis_down(node: Node, cx: Converter) -> None:
    shape = cx.shape(node.inputs[1])
    if shape is None or None in shape:
        raise fail(node, "the scale's shape must be known: only a per-tensor scale exists before opset 13")
    count = 1
    for d in shape:
        count *= d
    if count != 1:
        raise fail(
            node, f"a per-axis scale of shape {shape} does not exist before opset 13 (per-tensor only)"
        )
    node.attributes.pop("axis", None)


adapter(("QuantizeLinear", "DequantizeLinear"), 13, down=_axis_down)
