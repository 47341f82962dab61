"""Broadcasting: numpy-style broadcasting replaced the ``broadcast``/``axis`` attributes at opset 7,
and Max/Min/Sum/Mean learned to broadcast at 8.

Up, ``broadcast=1`` without ``axis`` aligns the second input to the trailing dimensions, which is what
numpy broadcasting does; an explicit ``axis`` is refused (targets are opset 7 or later, so
nothing goes below 7). Down across 8, the variadic ops need inputs of equal, known shapes.
"""

from __future__ import annotations

from onyx.ir.model import Node
from onyx.version_converter._core import Converter, adapter, fail

BINARY_7 = ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less")


def _binary_up(node: Node, cx: Converter) -> None:
    if node.attr("axis") is not None and node.attr("broadcast", 0):
        raise fail(node, "broadcast with an explicit axis has no equivalent from opset 7 on")
    node.attributes.pop("broadcast", None)
    node.attributes.pop("axis", None)


def _gemm_up(node: Node, cx: Converter) -> None:
    node.attributes.pop("broadcast", None)


def _variadic_down(node: Node, cx: Converter) -> None:
    shapes = [cx.shape(v) for v in node.inputs if v is not None]
    if len(shapes) < 2:
        return
    first = shapes[0]
    if first is None or None in first or any(s != first for s in shapes):
        raise fail(
            node, f"inputs of shapes {shapes} must all be known and equal before opset 8 (no broadcasting)"
        )


adapter(BINARY_7, 7, up=_binary_up)
adapter("Gemm", 7, up=_gemm_up)
adapter(("Max", "Min", "Sum", "Mean"), 8, down=_variadic_down)
