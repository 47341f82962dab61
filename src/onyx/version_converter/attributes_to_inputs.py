"""Attributes that became inputs (and back): Reshape-5, Upsample-9, Slice-10, TopK-10, Pad-11, Clip-11,
Dropout-12, Squeeze/Unsqueeze-13, Split-13 and -18, ReduceSum-13 and the other Reduce* at 18.

Up, the attribute's value becomes an initializer; down, the input must be a constant (an initializer or
a Constant node), whose value becomes the attribute again.
"""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Node
from onyx.version_converter._core import Converter, Replacement, adapter, fail, ints_attr


def attr_to_input(node: Node, cx: Converter, attr: str, index: int, dtype=np.int64) -> None:
    a = node.attributes.pop(attr, None)
    if a is not None:
        cx.set_input(node, index, cx.const(node, np.asarray(a.value, dtype), attr))


def input_to_ints(node: Node, cx: Converter, index: int, attr: str) -> None:
    arr = cx.require_constant(node, index, attr)
    if arr is not None:
        node.attributes[attr] = ints_attr(attr, arr)
        cx.clear_input(node, index)


def _moving(attr: str, index: int):
    def up(node: Node, cx: Converter) -> None:
        attr_to_input(node, cx, attr, index)

    def down(node: Node, cx: Converter) -> None:
        input_to_ints(node, cx, index, attr)

    return up, down


for _op, _attr, _version in (
    ("Reshape", "shape", 5),
    ("Squeeze", "axes", 13),
    ("Unsqueeze", "axes", 13),
    ("Split", "split", 13),
):
    _u, _d = _moving(_attr, 1)
    adapter(_op, _version, up=_u, down=_d)


# -- Reduce*: axes moved to an input (ReduceSum at 13, the others at 18) ----------------------------
REDUCE_18 = (
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
    "ReduceProd", "ReduceSumSquare",
)  # fmt: skip


# what each reduction does to one element alone (noop_with_empty_axes=1 without axes)
_ELEMENTWISE_REDUCTION = {
    "ReduceL1": "Abs", "ReduceL2": "Abs", "ReduceSumSquare": "Mul", "ReduceLogSum": "Log",
}  # fmt: skip


def _reduce_up(node: Node, cx: Converter) -> None:
    attr_to_input(node, cx, "axes", 1)


def _reduce_down(node: Node, cx: Converter) -> Replacement | None:
    axes = cx.require_constant(node, 1, "axes")
    noop = node.attributes.pop("noop_with_empty_axes", None)
    if (axes is None or axes.size == 0) and noop is not None and noop.value:
        # reducing over no axes with noop_with_empty_axes=1 reduces each element alone
        x = node.inputs[0]
        op, inputs = _ELEMENTWISE_REDUCTION.get(node.op_type, "Identity"), [x]
        if op == "Mul":
            inputs = [x, x]
        alone = cx.node(op, inputs, list(node.outputs), like=node)
        return cx.replace(node, [alone], cx.target)
    if axes is not None and axes.size:
        node.attributes["axes"] = ints_attr("axes", axes)
    cx.clear_input(node, 1)
    return None


adapter("ReduceSum", 13, up=_reduce_up, down=_reduce_down)
adapter(REDUCE_18, 18, up=_reduce_up, down=_reduce_down)


# -- Slice-10: starts/ends/axes attributes -> inputs, steps added ---------------------------------
def _slice_up(node: Node, cx: Converter) -> None:
    for i, name in enumerate(("starts", "ends", "axes"), start=1):
        attr_to_input(node, cx, name, i)


def _slice_down(node: Node, cx: Converter) -> None:
    steps = cx.require_constant(node, 4, "steps")
    if steps is not None and np.any(steps != 1):
        raise fail(node, f"steps {steps.tolist()} other than 1 do not exist before Slice-10")
    cx.clear_input(node, 4)
    for i, name in reversed(list(enumerate(("starts", "ends", "axes"), start=1))):
        input_to_ints(node, cx, i, name)


adapter("Slice", 10, up=_slice_up, down=_slice_down)


# -- TopK-10: k attribute -> a one-element int64 input ----------------------------------------------
def _topk_up(node: Node, cx: Converter) -> None:
    a = node.attributes.pop("k")
    cx.set_input(node, 1, cx.const(node, np.asarray([a.value], np.int64), "k"))


def _topk_down(node: Node, cx: Converter) -> None:
    k = cx.require_constant(node, 1, "k")
    cx.set_attr(node, "k", int(k.reshape(-1)[0]))
    cx.clear_input(node, 1)


adapter("TopK", 10, up=_topk_up, down=_topk_down)


# -- Upsample-9: scales attribute -> float input ----------------------------------------------------
def _upsample_up(node: Node, cx: Converter) -> None:
    attr_to_input(node, cx, "scales", 1, np.float32)


def _upsample_down(node: Node, cx: Converter) -> None:
    scales = cx.require_constant(node, 1, "scales")
    cx.set_attr(node, "scales", [float(x) for x in scales.reshape(-1)])
    cx.clear_input(node, 1)


adapter("Upsample", 9, up=_upsample_up, down=_upsample_down)


# -- Split-18: num_outputs, required when no split input is given -----------------------------------
def _split18_up(node: Node, cx: Converter) -> None:
    if len(node.inputs) < 2 or node.inputs[1] is None:
        cx.set_attr(node, "num_outputs", len(node.outputs))


def _split18_down(node: Node, cx: Converter) -> None:
    node.attributes.pop("num_outputs", None)
    if len(node.inputs) >= 2 and node.inputs[1] is not None:
        return
    shape = cx.shape(node.inputs[0])
    axis = int(node.attr("axis", 0))
    n = len(node.outputs)
    dim = shape[axis] if shape is not None and -len(shape) <= axis < len(shape) else None
    if dim is not None and dim % n:
        # Split-18 makes the last part smaller; earlier versions need the sizes spelled out
        chunk = -(-dim // n)
        sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
        cx.set_input(node, 1, cx.const(node, np.asarray(sizes, np.int64), "split"))


adapter("Split", 18, up=_split18_up, down=_split18_down)


# -- Pad-11: pads and value attributes -> inputs; Pad-18 axes input; Pad-19 wrap mode -----------------
def _pad_up(node: Node, cx: Converter) -> None:
    attr_to_input(node, cx, "pads", 1)
    value = node.attributes.pop("value", None)
    if value is not None and float(value.value) != 0.0:
        dtype = cx.numpy_dtype(node, node.inputs[0])
        cx.set_input(node, 2, cx.const(node, np.asarray(value.value, dtype), "value"))


def _pad_down(node: Node, cx: Converter) -> None:
    value = cx.require_constant(node, 2, "constant_value")
    if value is not None and value.size:
        cx.set_attr(node, "value", float(value.reshape(-1)[0]))
    cx.clear_input(node, 2)
    input_to_ints(node, cx, 1, "pads")


def _pad18_down(node: Node, cx: Converter) -> None:
    if len(node.inputs) < 4 or node.inputs[3] is None:
        return
    axes = cx.require_constant(node, 3, "axes")
    pads = cx.require_constant(node, 1, "pads").reshape(-1)
    rank = cx.rank(node.inputs[0])
    if rank is None:
        raise fail(node, "the axes input needs the data's rank to be known to write pads for every axis")
    full = np.zeros(2 * rank, np.int64)
    k = len(axes)
    for j, ax in enumerate(axes.reshape(-1)):
        ax = int(ax) % rank
        full[ax], full[rank + ax] = pads[j], pads[k + j]
    cx.set_input(node, 1, cx.const(node, full, "pads"))
    cx.clear_input(node, 3)


def _pad19_down(node: Node, cx: Converter) -> None:
    mode = node.attr("mode", b"constant")
    if mode in (b"wrap", "wrap"):
        raise fail(node, "mode 'wrap' does not exist before Pad-19")


adapter("Pad", 11, up=_pad_up, down=_pad_down)
adapter("Pad", 18, down=_pad18_down)
adapter("Pad", 19, down=_pad19_down)


# -- Clip-11: min/max attributes -> inputs of the data's type ---------------------------------------
def _clip_up(node: Node, cx: Converter) -> None:
    lo = node.attributes.pop("min", None)
    hi = node.attributes.pop("max", None)
    if lo is None and hi is None:
        return
    dtype = cx.numpy_dtype(node, node.inputs[0])
    if lo is not None:
        cx.set_input(node, 1, cx.const(node, np.asarray(lo.value, dtype), "min"))
    if hi is not None:
        cx.set_input(node, 2, cx.const(node, np.asarray(hi.value, dtype), "max"))


def _clip_down(node: Node, cx: Converter) -> None:
    for i, name in ((2, "max"), (1, "min")):
        arr = cx.require_constant(node, i, name)
        if arr is not None:
            cx.set_attr(node, name, float(arr.reshape(-1)[0]))
            cx.clear_input(node, i)


adapter("Clip", 11, up=_clip_up, down=_clip_down)


# -- Dropout-12: ratio attribute -> input, training_mode input ----------------------------------------
def _dropout_up(node: Node, cx: Converter) -> None:
    attr_to_input(node, cx, "ratio", 1, np.float32)


def _dropout_down(node: Node, cx: Converter) -> None:
    training = cx.require_constant(node, 2, "training_mode")
    if training is not None and bool(training.reshape(-1)[0]):
        raise fail(node, "training_mode=True does not exist before Dropout-12")
    cx.clear_input(node, 2)
    ratio = cx.require_constant(node, 1, "ratio")
    if ratio is not None:
        cx.set_attr(node, "ratio", float(ratio.reshape(-1)[0]))
        cx.clear_input(node, 1)
    node.attributes.pop("seed", None)  # only meaningful in training mode


adapter("Dropout", 12, up=_dropout_up, down=_dropout_down)
