"""Smaller changes: Constant's typed value attributes (12), Cast's ``saturate`` (19), Scatter becoming
ScatterElements (11), GridSample's mode names (20), Shape's start/end (15, down: a Slice), DFT's axis
(an attribute defaulting to 1, then an input defaulting to -2, at 20), Gemm's optional C (11),
RoiAlign's coordinate mode (16), CastLike (15, down: a Cast to the known type), Mod's fmod=0 on floats
(28), Trilu (14, down: a Where with a constant mask), Reshape's allowzero (14), and Scan's batch axis (9),
which has no rewrite."""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Attr, AttrType, Node
from onyx.ir.tensor import Tensor
from onyx.version_converter._core import Converter, Replacement, adapter, fail


def _constant12_down(node: Node, cx: Converter) -> None:
    for name, dtype in (
        ("value_float", np.float32),
        ("value_floats", np.float32),
        ("value_int", np.int64),
        ("value_ints", np.int64),
        ("value_string", object),
        ("value_strings", object),
    ):
        a = node.attributes.pop(name, None)
        if a is not None:
            arr = np.asarray(a.value, dtype=dtype)
            node.attributes["value"] = Attr("value", AttrType.TENSOR, Tensor.from_numpy(arr))


def _cast19_down(node: Node, cx: Converter) -> None:
    node.attributes.pop("saturate", None)  # only float8 targets saturate, and they do not exist before 19


def _scatter_up(node: Node, cx: Converter) -> Replacement:
    new = cx.node(
        "ScatterElements", list(node.inputs), list(node.outputs), like=node, axis=node.attr("axis", 0)
    )
    return cx.replace(node, [new], 11)


def _scatter_elements_down(node: Node, cx: Converter) -> Replacement:
    axis = node.attr("axis", 0)
    if axis < 0:
        rank = cx.rank(node.inputs[0])
        if rank is None:
            raise fail(node, f"negative axis {axis} needs the data's rank before opset 11")
        axis %= rank
    new = cx.node("Scatter", list(node.inputs), list(node.outputs), like=node, axis=axis)
    return cx.replace(node, [new], 10)


_GRID_MODES_20 = {"bilinear": "linear", "bicubic": "cubic"}


def _grid_up(node: Node, cx: Converter) -> None:
    mode = node.attr("mode", b"bilinear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    cx.set_attr(node, "mode", _GRID_MODES_20.get(mode, mode))


def _grid_down(node: Node, cx: Converter) -> None:
    mode = node.attr("mode", b"linear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    back = {v: k for k, v in _GRID_MODES_20.items()}
    cx.set_attr(node, "mode", back.get(mode, mode))
    rank = cx.rank(node.inputs[0])
    if rank is not None and rank != 4:
        raise fail(node, f"GridSample before opset 20 takes 4-D inputs only, got rank {rank}")


def _shape15_down(node: Node, cx: Converter) -> Replacement | None:
    start = node.attributes.pop("start", None)
    end = node.attributes.pop("end", None)
    if start is None and end is None:
        return None
    # Shape-15's start/end: the full shape, then a Slice of it (written in opset-13 Slice)
    shape = cx.node("Shape", [node.inputs[0]], like=node)
    starts = cx.const(node, np.asarray([start.value if start is not None else 0], np.int64), "start")
    ends = cx.const(
        node, np.asarray([end.value if end is not None else np.iinfo(np.int64).max], np.int64), "end"
    )
    axes = cx.const(node, np.asarray([0], np.int64), "axes")
    piece = cx.node("Slice", [shape.outputs[0], starts, ends, axes], list(node.outputs), like=node)
    return cx.replace(node, [shape, piece], 13)


def _dft20_up(node: Node, cx: Converter) -> None:
    # DFT-17's axis defaulted to 1, DFT-20's (an input) to -2: the axis is always written out
    axis = node.attributes.pop("axis", None)
    cx.set_input(node, 2, cx.const(node, np.asarray(axis.value if axis is not None else 1, np.int64), "axis"))


def _dft20_down(node: Node, cx: Converter) -> None:
    axis = cx.require_constant(node, 2, "axis")
    cx.set_attr(node, "axis", int(axis.reshape(-1)[0]) if axis is not None else -2)
    cx.clear_input(node, 2)


def _gemm11_down(node: Node, cx: Converter) -> None:
    if len(node.inputs) < 3 or node.inputs[2] is None:  # C became optional at 11: a zero scalar before
        cx.set_input(node, 2, cx.const(node, np.zeros((), cx.numpy_dtype(node, node.inputs[0])), "C"))


def _roi_align16_up(node: Node, cx: Converter) -> None:
    # RoiAlign-10 shifted no pixel; 16 added the mode, defaulting to half_pixel
    if "coordinate_transformation_mode" not in node.attributes:
        cx.set_attr(node, "coordinate_transformation_mode", "output_half_pixel")


def _roi_align16_down(node: Node, cx: Converter) -> None:
    mode = node.attributes.pop("coordinate_transformation_mode", None)
    value = mode.value.decode() if mode is not None and isinstance(mode.value, bytes) else "half_pixel"
    if mode is not None and not isinstance(mode.value, bytes):
        value = str(mode.value)
    if value != "output_half_pixel":
        raise fail(
            node, f"coordinate_transformation_mode {value!r}: RoiAlign-10 only does 'output_half_pixel'"
        )


def _cast_like_down(node: Node, cx: Converter) -> Replacement:
    to = cx.elem_type(node.inputs[1])
    if to is None:
        raise fail(node, "the element type of target_type must be known to write CastLike as a Cast")
    saturate = node.attr("saturate")
    cast = cx.node("Cast", [node.inputs[0]], list(node.outputs), like=node, to=int(to), saturate=saturate)
    return cx.replace(node, [cast], 19 if saturate is not None else 14)


def _mod28_down(node: Node, cx: Converter) -> None:
    if int(node.attr("fmod", 0)) == 1:
        return
    et = cx.elem_type(node.inputs[0])
    if et is None or et in _FLOAT_TYPES:
        what = "an unknown element type" if et is None else "floats"
        raise fail(node, f"fmod=0 on {what}: before Mod-28 floating-point inputs need fmod=1")


_FLOAT_TYPES = {1, 10, 11, 16}  # float, float16, double, bfloat16


def _trilu_down(node: Node, cx: Converter) -> Replacement:
    shape = cx.shape(node.inputs[0])
    if shape is None or len(shape) < 2 or None in shape[-2:]:
        raise fail(node, "the last two dims must be known to write Trilu's mask as a constant")
    k = cx.require_constant(node, 1, "k")
    k = int(k.reshape(-1)[0]) if k is not None else 0
    rows, cols = shape[-2:]
    keep = (
        np.triu(np.ones((rows, cols), bool), k)
        if node.attr("upper", 1)
        else np.tril(np.ones((rows, cols), bool), k)
    )
    zero = cx.const(node, np.zeros((), cx.numpy_dtype(node, node.inputs[0])), "zero")
    mask = cx.const(node, keep, "mask")
    where = cx.node("Where", [mask, node.inputs[0], zero], list(node.outputs), like=node)
    cx.clear_input(node, 1)
    return cx.replace(node, [where], 13)


def _reshape14_down(node: Node, cx: Converter) -> None:
    if not int(node.attr("allowzero", 0)):
        return
    shape = cx.constant(node.inputs[1]) if len(node.inputs) > 1 else None
    if shape is None or (shape == 0).any():
        raise fail(node, "allowzero=1 with a shape that may hold 0 has no equivalent before Reshape-14")
    node.attributes.pop("allowzero")  # without a 0 in the shape, allowzero changes nothing


def _scan9(node: Node, cx: Converter) -> None:
    raise fail(node, "Scan-8 and Scan-9 differ in their batch axis and sequence lengths; no rewrite exists")


adapter("Constant", 12, down=_constant12_down)
adapter("Cast", 19, down=_cast19_down)
adapter("Scatter", 11, up=_scatter_up)
adapter("ScatterElements", 11, down=_scatter_elements_down)
adapter("GridSample", 20, up=_grid_up, down=_grid_down)
adapter("Scan", 9, up=_scan9, down=_scan9)
adapter("Shape", 15, down=_shape15_down)
adapter("CastLike", 15, down=_cast_like_down)
adapter("Mod", 28, down=_mod28_down)
adapter("Trilu", 14, down=_trilu_down)
adapter("Reshape", 14, down=_reshape14_down)
adapter("DFT", 20, up=_dft20_up, down=_dft20_down)
adapter("Gemm", 11, down=_gemm11_down)
adapter("RoiAlign", 16, up=_roi_align16_up, down=_roi_align16_down)
