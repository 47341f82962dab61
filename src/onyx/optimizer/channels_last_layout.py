"""Layout pass: mark the convolutions whose output should stay channels-last (NHWC).

A convolution whose every reader is a 2-D depthwise convolution (multiplier 1) leaves its output
channels-last: the depthwise loop then reads whole rows of channels without plane copies, and the 1x1
convolutions after it keep the layout (MobileNet's expand / depthwise / project blocks). The mark is a
node annotation (``metadata_props`` entry ``onyx.layout = channels_last``, see
:data:`onyx.ops.nn.conv.CHANNELS_LAST_KEY`) that the Conv kernel reads once, when the plan is built; a
convolution without it runs NCHW. Outputs keep their values either way: the layout is a view of the
same numbers. Part of level 3 (onnxruntime's ORT_ENABLE_ALL, whose layout transformations it mirrors).
"""

from __future__ import annotations

from onyx.ir.model import Model, Node, Value
from onyx.ops.nn.conv import CHANNELS_LAST_KEY, CHANNELS_LAST_VALUE
from onyx.optimizer._util import Scope

_CONV_OPS = (("Conv", ("", "ai.onnx")), ("FusedConv", ("com.microsoft",)))
_MARK = (CHANNELS_LAST_KEY, CHANNELS_LAST_VALUE)


def _is_conv(node: Node) -> bool:
    return any(node.op_type == op and (node.domain or "") in domains for op, domains in _CONV_OPS)


def _group(node: Node) -> int | None:
    a = node.attributes.get("group")
    if a is None:
        return 1
    if a.ref_attr_name:
        return None
    return int(a.value)


def _is_depthwise_reader(sc: Scope, node: Node, index: int) -> bool:
    """``node`` reads the value as its X and is a 2-D depthwise convolution with multiplier 1 and
    constant weights."""
    if index != 0 or not _is_conv(node) or len(node.inputs) < 2 or node.inputs[1] is None:
        return False
    w = sc.const_value(node.inputs[1])
    group = _group(node)
    if w is None or group is None or w.ndim != 4:
        return False
    return w.shape[1] == 1 and group > 1 and w.shape[0] == group


def _wants(sc: Scope, node: Node) -> bool:
    if not _is_conv(node) or len(node.outputs) != 1:
        return False
    y: Value = node.outputs[0]
    if not y.uses or sc.is_graph_output(y):
        return False
    return all(_is_depthwise_reader(sc, reader, index) for reader, index in y.uses)


def mark_channels_last(model: Model) -> bool:
    """Set (or clear) the channels-last mark of every convolution; True when a mark changed."""
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        for node in sc.nodes(entry):
            if not _is_conv(node):
                continue
            want = _wants(sc, node)
            has = _MARK in node.metadata_props
            if want and not has:
                node.metadata_props.append(_MARK)
                changed = True
            elif has and not want:
                node.metadata_props[:] = [p for p in node.metadata_props if p != _MARK]
                changed = True
    return changed
