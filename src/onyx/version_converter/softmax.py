"""Softmax, LogSoftmax and Hardmax: at opset 13 ``axis`` stopped meaning "flatten to 2-D at axis" and
started meaning one axis (and its default went from 1 to -1); at 11 it accepted negative values.

The two meanings agree when the axis is the last one. Otherwise: up, the old behaviour is spelled out
as Flatten -> op(axis=-1) -> Reshape to the input's shape; down, the new one as Transpose (axis to the
end) -> op(axis=-1) -> Transpose back, which needs the rank.
"""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Node
from onyx.version_converter._core import Converter, Replacement, adapter, fail

OPS = ("Softmax", "LogSoftmax", "Hardmax")


def _up(node: Node, cx: Converter) -> Replacement | None:
    axis = int(node.attr("axis", 1))
    rank = cx.rank(node.inputs[0])
    if axis == -1 or (rank is not None and axis % max(rank, 1) == rank - 1):
        cx.set_attr(node, "axis", -1)
        return None
    x, (y,) = node.inputs[0], node.outputs
    flat = cx.node("Flatten", [x], like=node, axis=axis)
    inner = cx.node(node.op_type, [flat.outputs[0]], like=node, axis=-1)
    shape = cx.node("Shape", [x], like=node)
    back = cx.node("Reshape", [inner.outputs[0], shape.outputs[0]], [y], like=node)
    return cx.replace(node, [flat, inner, shape, back], 13)


def _down(node: Node, cx: Converter) -> Replacement | None:
    axis = int(node.attr("axis", -1))
    rank = cx.rank(node.inputs[0])
    if axis == -1 or (rank is not None and axis % rank == rank - 1):
        cx.set_attr(node, "axis", -1)  # the coerced 2-D view at the last axis is the same thing
        return None
    if rank is None:
        raise fail(node, f"axis {axis} is not the last one and the input's rank is unknown")
    axis %= rank
    perm = [i for i in range(rank) if i != axis] + [axis]
    inverse = list(np.argsort(perm))
    x, (y,) = node.inputs[0], node.outputs
    t1 = cx.node("Transpose", [x], like=node, perm=perm)
    inner = cx.node(node.op_type, [t1.outputs[0]], like=node, axis=rank - 1)
    t2 = cx.node("Transpose", [inner.outputs[0]], [y], like=node, perm=[int(i) for i in inverse])
    return cx.replace(node, [t1, inner, t2], 12)


def _negative_down(node: Node, cx: Converter) -> None:
    axis = node.attr("axis")
    if axis is not None and axis < 0:
        rank = cx.rank(node.inputs[0])
        if rank is None:
            raise fail(node, f"negative axis {axis} needs the input's rank before opset 11")
        cx.set_attr(node, "axis", axis % rank)


adapter(OPS, 13, up=_up, down=_down)
adapter(OPS, 11, down=_negative_down)
