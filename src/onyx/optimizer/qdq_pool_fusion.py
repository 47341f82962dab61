"""QDQ global average pool fusion: ``Q(GlobalAveragePool(DQ(x)))`` -> com.microsoft
``QLinearGlobalAveragePool`` (as onnxruntime's QDQ transformer does, the last pool of a quantized CNN):
the channel means then come from the int32 sums of the 8-bit values, requantized once, instead of a
float32 round trip. x and y per tensor, of one 8-bit type."""

from __future__ import annotations

from onyx.ir.model import Model, Node
from onyx.optimizer._pattern import Ctx, is_op, make_node, run_on_graphs
from onyx.optimizer._qdq import dq_of, q_after


def _visit(ctx: Ctx, node: Node) -> bool:
    if not is_op(node, "GlobalAveragePool") or len(node.inputs) != 1 or len(node.outputs) != 1:
        return False
    rank = ctx.rank(node.inputs[0])
    if rank is None or rank < 3:
        return False
    q = q_after(ctx, node.outputs[0])
    dq = dq_of(ctx, node.inputs[0])
    if q is None or dq is None or not dq.scalar or dq.zp_c.dtype != q.zp_c.dtype:
        return False
    new = make_node(
        "QLinearGlobalAveragePool",
        [dq.q, dq.scale, dq.zp, q.scale, q.zp],
        name=(node.name or "global_average_pool") + "_QLinearGlobalAveragePool",
        channels_last=0,
    )
    ctx.replace([node, q.node], q.node.outputs[0], new)
    return True


def qdq_pool_fusion(model: Model) -> bool:
    """Fuse DQ -> GlobalAveragePool -> Q into QLinearGlobalAveragePool; returns whether it changed."""
    return run_on_graphs(model, _visit)
