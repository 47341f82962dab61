"""QDQ convolution fusion: ``Q(Conv(DQ(x), DQ(w), bias))`` -> ``QLinearConv`` (as onnxruntime's QDQ
transformer does): the convolution then runs on 8-bit integers, exactly, and requantizes once. x and y
per tensor, w per tensor or per output channel (axis 0), w constant; the bias becomes int32 in units
of x_scale * w_scale (its DequantizeLinear's int32 values when that is its scale)."""

from __future__ import annotations

from onyx.ir.model import Model, Node
from onyx.optimizer._pattern import Ctx, is_op, make_node, run_on_graphs
from onyx.optimizer._qdq import dq_of, int_bias, per_channel, q_after


def _visit(ctx: Ctx, conv: Node) -> bool:
    if not is_op(conv, "Conv") or len(conv.inputs) < 2 or len(conv.outputs) != 1:
        return False
    q = q_after(ctx, conv.outputs[0])
    dx = dq_of(ctx, conv.inputs[0])
    dw = dq_of(ctx, conv.inputs[1])
    if q is None or dx is None or dw is None or not dx.scalar:
        return False
    w = ctx.const(dw.q)
    if w is None or w.ndim < 3 or not per_channel(dw, w.shape[0], 0, w.ndim):
        return False
    bias_in = conv.inputs[2] if len(conv.inputs) > 2 else None
    bias = int_bias(ctx, bias_in, dx.scale_c.reshape(-1) * dw.scale_c.reshape(-1), w.shape[0])
    if bias is False:
        return False
    b = None if bias is None else ctx.new_const(bias, (conv.name or "conv") + "_bias_int32")
    new = make_node(
        "QLinearConv",
        [dx.q, dx.scale, dx.zp, dw.q, dw.scale, dw.zp, q.scale, q.zp, b],
        domain="",
        name=(conv.name or "conv") + "_QLinearConv",
    )
    new.attributes.update(conv.attributes)
    ctx.replace([conv, q.node], q.node.outputs[0], new)
    return True


def qdq_conv_fusion(model: Model) -> bool:
    """Fuse DequantizeLinear -> Conv -> QuantizeLinear into QLinearConv; returns whether it changed."""
    return run_on_graphs(model, _visit)
