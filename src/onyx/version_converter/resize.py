"""Upsample and Resize: Upsample became Resize at 10; Resize-11 added ``roi``, ``sizes`` and the
coordinate/nearest modes; 13 made ``roi`` and ``scales`` optional; 19 added ``half_pixel_symmetric``.

Resize-10 (like Upsample) maps output to input coordinates as ``x_out / scale`` ("asymmetric") and picks
the nearest pixel by floor when enlarging and by ceil when shrinking (onnxruntime's "simple" mode), so
that is what an 11 node gets, and what a node going down to 10 must say.
"""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Node
from onyx.version_converter._core import Converter, Replacement, adapter, fail


def _as_str(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _nearest_mode_10(node: Node, cx: Converter, scales: np.ndarray | None) -> str:
    if scales is None:
        raise fail(node, "nearest resizing needs constant scales to pick Resize-11's nearest_mode")
    moving = scales[scales != 1]
    if (moving > 1).all():
        return "floor"
    if (moving < 1).all():
        return "ceil"
    raise fail(node, f"scales {scales.tolist()} both enlarge and shrink: no single nearest_mode matches")


def _upsample_to_resize(node: Node, cx: Converter) -> Replacement:
    cx.enlarging.add(id(node.outputs[0]))  # Upsample's scales are >= 1: Resize-11 rounds by floor
    new = cx.node(
        "Resize", list(node.inputs), list(node.outputs), like=node, mode=node.attr("mode", b"nearest")
    )
    return cx.replace(node, [new], 10)


def _resize_to_upsample(node: Node, cx: Converter) -> Replacement:
    new = cx.node(
        "Upsample", list(node.inputs), list(node.outputs), like=node, mode=node.attr("mode", b"nearest")
    )
    return cx.replace(node, [new], 9)


def _resize11_up(node: Node, cx: Converter) -> None:
    scales = node.inputs[1]
    node.set_input(1, cx.const(node, np.zeros(0, np.float32), "roi"))
    cx.set_input(node, 2, scales)
    cx.set_attr(node, "coordinate_transformation_mode", "asymmetric")
    if _as_str(node.attr("mode", b"nearest")) == "nearest":
        known = cx.constant(scales)
        enlarging = known is None and id(node.outputs[0]) in cx.enlarging
        cx.set_attr(node, "nearest_mode", "floor" if enlarging else _nearest_mode_10(node, cx, known))


def _resize11_down(node: Node, cx: Converter) -> None:
    mode = _as_str(node.attr("mode", b"nearest"))
    transform = _as_str(node.attr("coordinate_transformation_mode", b"half_pixel"))
    if mode not in ("nearest", "linear"):
        raise fail(node, f"mode {mode!r} does not exist in Resize-10")
    if transform != "asymmetric":
        raise fail(
            node,
            f"coordinate_transformation_mode {transform!r} has no equivalent in Resize-10 "
            "(which maps coordinates as 'asymmetric')",
        )
    scales = cx.constant(node.inputs[2]) if len(node.inputs) > 2 else None
    sizes = node.inputs[3] if len(node.inputs) > 3 else None
    if sizes is not None and (scales is None or scales.size == 0):
        sizes_arr = cx.require_constant(node, 3, "sizes")
        shape = cx.shape(node.inputs[0])
        if shape is None or None in shape:
            raise fail(node, "sizes can only become scales when the input's shape is known")
        scales = sizes_arr.astype(np.float64) / np.asarray(shape, np.float64)
        cx.set_input(node, 2, cx.const(node, scales.astype(np.float32), "scales"))
        cx.clear_input(node, 3)
    if mode == "nearest":
        expected = _nearest_mode_10(node, cx, scales)
        got = _as_str(node.attr("nearest_mode", b"round_prefer_floor"))
        if got != expected:
            raise fail(node, f"nearest_mode {got!r}: Resize-10 rounds by {expected!r} at these scales")
    for name in ("coordinate_transformation_mode", "nearest_mode"):
        node.attributes.pop(name, None)
    cx.clear_input(node, 3)
    scales_v = node.inputs[2]
    cx.clear_input(node, 1)
    cx.clear_input(node, 2)
    node.set_input(1, scales_v)
    node.inputs[2:] = []


def _resize13_up(node: Node, cx: Converter) -> None:
    if _as_str(node.attr("coordinate_transformation_mode", b"")) == "tf_half_pixel_for_nn":
        raise fail(node, "coordinate_transformation_mode 'tf_half_pixel_for_nn' was removed at Resize-13")


def _resize13_down(node: Node, cx: Converter) -> None:
    for i, hint in ((1, "roi"), (2, "scales")):
        if len(node.inputs) <= i or node.inputs[i] is None:
            cx.set_input(node, i, cx.const(node, np.zeros(0, np.float32), hint))


def _resize18_down(node: Node, cx: Converter) -> None:
    axes = node.attributes.pop("axes", None)
    if axes is None:
        return
    rank = cx.rank(node.inputs[0])
    if rank is None:
        raise fail(node, "axes needs the input's rank to be known to write scales or sizes for every axis")
    positions = [a % rank for a in axes.value]
    for index, what in ((2, "scales"), (3, "sizes")):
        if index >= len(node.inputs) or node.inputs[index] is None:
            continue
        given = cx.require_constant(node, index, what)
        if given.size == 0:
            continue
        if what == "scales":
            full = np.ones(rank, np.float32)
        else:
            shape = cx.shape(node.inputs[0])
            if shape is None or any(shape[i] is None for i in range(rank) if i not in positions):
                raise fail(node, "sizes for the axes not listed need the input's dims to be known")
            full = np.asarray([d if d is not None else 0 for d in shape], np.int64)
        full[positions] = given.reshape(-1)
        cx.clear_input(node, index)
        cx.set_input(node, index, cx.const(node, full, what))


def _resize19_down(node: Node, cx: Converter) -> None:
    if _as_str(node.attr("coordinate_transformation_mode", b"")) == "half_pixel_symmetric":
        raise fail(
            node, "coordinate_transformation_mode 'half_pixel_symmetric' does not exist before Resize-19"
        )


adapter("Upsample", 10, up=_upsample_to_resize)
adapter("Resize", 10, down=_resize_to_upsample)
adapter("Resize", 11, up=_resize11_up, down=_resize11_down)
adapter("Resize", 13, up=_resize13_up, down=_resize13_down)
adapter("Resize", 18, down=_resize18_down)
adapter("Resize", 19, down=_resize19_down)
