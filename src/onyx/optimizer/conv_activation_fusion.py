"""Conv + activation fusion: ``Act(Conv(X, W, B))`` -> com.microsoft ``FusedConv`` (float32), with
Act one of Relu, Sigmoid, Tanh, LeakyRelu, Clip (constant bounds; ReLU6) and HardSigmoid. A residual
``Conv(...) + Z`` with Z of the Conv output's known shape becomes ``FusedConv(X, W, B, Z)``, with
the activation that follows when there is one (onnxruntime applies it after the sum).
"""

from __future__ import annotations

from onyx.ir.model import Model, Node
from onyx.optimizer._pattern import Ctx, attr, is_op, make_node, other_input, run_on_graphs

_FLOAT = 1


def activation_of(ctx: Ctx, act: Node, allow_clip: bool = True) -> tuple[str, list[float]] | None:
    """(activation name, parameters) for a supported activation node, else None."""
    try:
        if is_op(act, "Relu", "Sigmoid", "Tanh"):
            return act.op_type, []
        if is_op(act, "LeakyRelu"):
            return "LeakyRelu", [float(attr(act, "alpha", 0.01))]
        if is_op(act, "HardSigmoid"):
            return "HardSigmoid", [float(attr(act, "alpha", 0.2)), float(attr(act, "beta", 0.5))]
        if allow_clip and is_op(act, "Clip"):
            if ctx.opset < 11:
                return "Clip", [
                    float(attr(act, "min", -3.4028234663852886e38)),
                    float(attr(act, "max", 3.4028234663852886e38)),
                ]
            lo = act.inputs[1] if len(act.inputs) > 1 else None
            hi = act.inputs[2] if len(act.inputs) > 2 else None
            lv = -3.4028234663852886e38 if lo is None else ctx.scalar(lo)
            hv = 3.4028234663852886e38 if hi is None else ctx.scalar(hi)
            if lv is None or hv is None:
                return None
            return "Clip", [lv, hv]
    except LookupError:
        return None
    return None


def _conv_attrs(conv: Node) -> dict | None:
    out = {}
    for k, a in conv.attributes.items():
        if a.ref_attr_name or k not in ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"):
            return None
        out[k] = a
    return out


def _visit(ctx: Ctx, conv: Node) -> bool:
    if not is_op(conv, "Conv") or len(conv.outputs) != 1:
        return False
    y = conv.outputs[0]
    if not ctx.single_use(y):
        return False
    w = ctx.const(conv.inputs[1])
    if w is None or w.dtype.name != "float32" or ctx.elem(conv.inputs[0]) not in (None, _FLOAT):
        return False
    attrs = _conv_attrs(conv)
    if attrs is None:
        return False
    nxt = y.uses[0][0]
    nodes = [conv]
    z = None
    out = y
    if is_op(nxt, "Add") and len(nxt.inputs) == 2 and nxt.inputs[0] is not nxt.inputs[1]:
        # residual: Conv + Z (Z of the Conv output's known shape), then maybe an activation
        zz = other_input(nxt, y)
        s = nxt.outputs[0]
        if zz is None or not ctx.same_dims(zz, y) or not ctx.same_dims(s, y) or ctx.elem(zz) != _FLOAT:
            return False
        z = zz
        nodes.append(nxt)
        out = s
        if ctx.single_use(s):
            nxt = s.uses[0][0]
    act = activation_of(ctx, nxt) if nxt is not nodes[-1] else None
    if act is not None:
        nodes.append(nxt)
        out = nxt.outputs[0]
    elif z is None:
        return False
    if not ctx.private(nodes, out):
        return False
    b = conv.inputs[2] if len(conv.inputs) > 2 else None
    new = make_node(
        "FusedConv", [conv.inputs[0], conv.inputs[1], b, z], name=(conv.name or "conv") + "_FusedConv"
    )
    new.attributes.update(attrs)
    from onyx.ir.builder import make_attr

    if act is not None:
        new.attributes["activation"] = make_attr("activation", act[0])
    if act is not None and act[1]:
        new.attributes["activation_params"] = make_attr("activation_params", [float(p) for p in act[1]])
    ctx.replace(nodes, out, new)
    return True


def conv_activation_fusion(model: Model) -> bool:
    """Fuse Conv (+ residual Add) + activation into FusedConv; returns whether it changed."""
    return run_on_graphs(model, _visit)
