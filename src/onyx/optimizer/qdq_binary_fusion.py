"""QDQ elementwise fusion: ``Q(Add(DQ(a), DQ(b)))`` -> com.microsoft ``QLinearAdd``, likewise Mul ->
``QLinearMul`` (as onnxruntime's QDQ transformer does): per-tensor parameters, a, b and the output of
one 8-bit type."""

from __future__ import annotations

from onyx.ir.model import Model, Node
from onyx.optimizer._pattern import Ctx, is_op, make_node, run_on_graphs
from onyx.optimizer._qdq import dq_of, q_after


def _visit(ctx: Ctx, node: Node) -> bool:
    if not is_op(node, "Add", "Mul") or len(node.inputs) != 2 or len(node.outputs) != 1:
        return False
    q = q_after(ctx, node.outputs[0])
    da, db = dq_of(ctx, node.inputs[0]), dq_of(ctx, node.inputs[1])
    if q is None or da is None or db is None or not da.scalar or not db.scalar:
        return False
    if not da.zp_c.dtype == db.zp_c.dtype == q.zp_c.dtype:
        return False
    new = make_node(
        "QLinear" + node.op_type,
        [da.q, da.scale, da.zp, db.q, db.scale, db.zp, q.scale, q.zp],
        name=(node.name or node.op_type.lower()) + "_QLinear" + node.op_type,
    )
    ctx.replace([node, q.node], q.node.outputs[0], new)
    return True


def qdq_binary_fusion(model: Model) -> bool:
    """Fuse DQ -> Add / Mul -> Q into QLinearAdd / QLinearMul; returns whether it changed the model."""
    return run_on_graphs(model, _visit)
