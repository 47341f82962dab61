"""BatchNormalization's attribute and output changes (7, 9, 14), GroupNormalization's per-group ->
per-channel scale and bias (18 -> 21), and decompositions of LayerNormalization (17) and
GroupNormalization and RMSNormalization (23) for opsets that lack them.

Decompositions are written in opset-17 operators (Reduce* with an ``axes`` attribute) and converted on
from there to the target like any other node.
"""

from __future__ import annotations

import numpy as np

from onyx.ir.dtypes import DataType, from_numpy
from onyx.ir.model import Node, Value
from onyx.version_converter._core import (
    WRITTEN_AT,
    Converter,
    Emitter,
    Replacement,
    adapter,
    fail,
    named_output,
)


def _bn7_up(node: Node, cx: Converter) -> None:
    node.attributes.pop("is_test", None)  # inference is the only meaning left from 7 on


def _bn14_up(node: Node, cx: Converter) -> None:
    used = [v.name for v in node.outputs[1:] if v.uses]
    if used:
        raise fail(node, f"training outputs {used} changed meaning at BatchNormalization-14")


adapter("BatchNormalization", 7, up=_bn7_up)
adapter("BatchNormalization", 14, up=_bn14_up)


def _stashed(e: Emitter, node: Node, x: Value, stash: int) -> tuple[Value, np.dtype, bool]:
    """The input in the precision the statistics are computed in (float32 when ``stash_type`` asks it)."""
    dtype = e.cx.numpy_dtype(node, x)
    if stash == int(DataType.FLOAT) and dtype != np.float32:
        return e("Cast", x, to=int(DataType.FLOAT)), np.dtype(np.float32), True
    return x, dtype, False


def _layer_norm_down(node: Node, cx: Converter) -> Replacement:
    x, scale = node.inputs[0], node.inputs[1]
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    axis = int(node.attr("axis", -1))
    rank = cx.rank(x)
    if axis < 0:
        axes = list(range(axis, 0))
    elif rank is not None:
        axes = list(range(axis, rank))
    else:
        raise fail(node, f"axis {axis} needs the input's rank to be known to decompose")
    e = Emitter(cx, node)
    xs, dtype, cast = _stashed(e, node, x, int(node.attr("stash_type", 1)))
    mean = e("ReduceMean", xs, axes=axes, keepdims=1, out=None if cast else named_output(node, 1))
    d = e("Sub", xs, mean)
    var = e("ReduceMean", e("Mul", d, d), axes=axes, keepdims=1)
    inv = e(
        "Reciprocal",
        e("Sqrt", e("Add", var, e.const(np.asarray(node.attr("epsilon", 1e-5), dtype)))),
        out=None if cast else named_output(node, 2),
    )
    normed = e("Mul", d, inv)
    if cast:
        normed = e("Cast", normed, to=int(from_numpy(cx.numpy_dtype(node, x))))
        for i, stat in ((1, mean), (2, inv)):
            if named_output(node, i) is not None:
                e("Identity", stat, out=named_output(node, i))
    y = node.outputs[0]
    if bias is None:
        e("Mul", normed, scale, out=y)
    else:
        e("Add", e("Mul", normed, scale), bias, out=y)
    return cx.replace(node, e.nodes, WRITTEN_AT)


adapter("LayerNormalization", 17, down=_layer_norm_down)


def _group_norm_nodes(node: Node, cx: Converter, per_channel: bool) -> Replacement:
    x, scale, bias = node.inputs[:3]
    groups = int(node.attr("num_groups"))
    e = Emitter(cx, node)
    xs, dtype, cast = _stashed(e, node, x, int(node.attr("stash_type", 1)) if per_channel else 0)
    grouped = e("Reshape", xs, e.const(np.asarray([0, groups, -1], np.int64)))
    mean = e("ReduceMean", grouped, axes=[2], keepdims=1)
    d = e("Sub", grouped, mean)
    var = e("ReduceMean", e("Mul", d, d), axes=[2], keepdims=1)
    normed = e("Div", d, e("Sqrt", e("Add", var, e.const(np.asarray(node.attr("epsilon", 1e-5), dtype)))))
    if cast:
        normed = e("Cast", normed, to=int(from_numpy(cx.numpy_dtype(node, x))))
    if not per_channel:  # GroupNormalization-18: one scale and bias per group
        column = e.const(np.asarray([groups, 1], np.int64))
        normed = e("Add", e("Mul", normed, e("Reshape", scale, column)), e("Reshape", bias, column))
        e("Reshape", normed, e("Shape", x), out=node.outputs[0])
        return cx.replace(node, e.nodes, WRITTEN_AT)
    rank = cx.rank(x)
    if rank is None:
        raise fail(node, "the input's rank must be known to decompose a per-channel GroupNormalization")
    back = e("Reshape", normed, e("Shape", x))
    trailing = e.const(np.arange(1, rank - 1, dtype=np.int64))
    s = e("Unsqueeze", scale, trailing) if rank > 2 else scale
    b = e("Unsqueeze", bias, trailing) if rank > 2 else bias
    e("Add", e("Mul", back, s), b, out=node.outputs[0])
    return cx.replace(node, e.nodes, WRITTEN_AT)


def _gn18_down(node: Node, cx: Converter) -> Replacement:
    return _group_norm_nodes(node, cx, per_channel=False)


def _gn21_down(node: Node, cx: Converter) -> Replacement:
    # GroupNormalization-18 (per-group parameters) is deprecated: below 21 the op is spelled out
    return _group_norm_nodes(node, cx, per_channel=True)


def _gn21_up(node: Node, cx: Converter) -> None:
    groups = int(node.attr("num_groups"))
    shape = cx.shape(node.inputs[0])
    channels = shape[1] if shape is not None and len(shape) > 1 else None
    if channels is None:
        raise fail(node, "the channel count must be known to spread per-group scale and bias to channels")
    for i in (1, 2):
        v = node.inputs[i]
        arr = cx.constant(v)
        if arr is not None:
            new = cx.const(node, np.repeat(arr.reshape(groups), channels // groups), "channel")
            cx.clear_input(node, i)
            cx.set_input(node, i, new)
            continue
        col = cx.node("Unsqueeze", [v, cx.const(node, np.asarray([1], np.int64), "axes")], like=node)
        wide = cx.node(
            "Expand",
            [col.outputs[0], cx.const(node, np.asarray([groups, channels // groups], np.int64), "shape")],
            like=node,
        )
        flat = cx.node(
            "Reshape", [wide.outputs[0], cx.const(node, np.asarray([-1], np.int64), "flat")], like=node
        )
        cx.insert_before(node, [col, wide, flat])
        node.set_input(i, flat.outputs[0])


adapter("GroupNormalization", 18, down=_gn18_down)
adapter("GroupNormalization", 21, up=_gn21_up, down=_gn21_down)


def _rms_norm_down(node: Node, cx: Converter) -> Replacement:
    x, scale = node.inputs[0], node.inputs[1]
    axis = int(node.attr("axis", -1))
    rank = cx.rank(x)
    if axis < 0:
        axes = list(range(axis, 0))
    elif rank is not None:
        axes = list(range(axis, rank))
    else:
        raise fail(node, f"axis {axis} needs the input's rank to be known to decompose")
    e = Emitter(cx, node)
    xs, dtype, cast = _stashed(e, node, x, int(node.attr("stash_type", 1)))
    mean_square = e("ReduceMean", e("Mul", xs, xs), axes=axes, keepdims=1)
    eps = e.const(np.asarray(node.attr("epsilon", 1e-5), dtype))
    normed = e("Div", xs, e("Sqrt", e("Add", mean_square, eps)))
    if cast:
        normed = e("Cast", normed, to=int(from_numpy(cx.numpy_dtype(node, x))))
    e("Mul", normed, scale, out=node.outputs[0])
    return cx.replace(node, e.nodes, WRITTEN_AT)


adapter("RMSNormalization", 23, down=_rms_norm_down)
