"""QDQ matrix-product fusions, as onnxruntime's QDQ transformer does them (B a constant weight):

- ``Q(MatMul(DQ(a), DQ(b)))`` -> ``QLinearMatMul``;
- ``Q(Gemm(DQ(a), DQ(b), bias))`` -> com.microsoft ``QGemm`` with its requantized output (alpha = beta
  = 1, transA = 0; the bias int32 in units of a_scale * b_scale);
- ``MatMul(DQ(a), DQ(b))`` read as float -> com.microsoft ``MatMulIntegerToFloat``.

a per tensor; b per tensor or per column (axis 1 of a 2-D MatMul weight; the output axis of a Gemm's)."""

from __future__ import annotations

from onyx.ir.model import Model, Node
from onyx.optimizer._pattern import Ctx, attr, is_op, make_node, run_on_graphs
from onyx.optimizer._qdq import dq_of, int_bias, per_channel, q_after


def _visit(ctx: Ctx, node: Node) -> bool:
    if not is_op(node, "MatMul", "Gemm") or len(node.inputs) < 2 or len(node.outputs) != 1:
        return False
    da, db = dq_of(ctx, node.inputs[0]), dq_of(ctx, node.inputs[1])
    if da is None or db is None or not da.scalar:
        return False
    b = ctx.const(db.q)
    if b is None or b.ndim != 2:
        return False
    name = node.name or node.op_type.lower()
    y = node.outputs[0]
    q = q_after(ctx, y)
    if node.op_type == "Gemm":
        trans_b = int(attr(node, "transB", 0))
        if (
            q is None
            or attr(node, "transA", 0)
            or attr(node, "alpha", 1.0) != 1.0
            or attr(node, "beta", 1.0) != 1.0
        ):
            return False
        n = b.shape[0] if trans_b else b.shape[1]
        if not per_channel(db, n, 0 if trans_b else 1, 2):
            return False
        bias_in = node.inputs[2] if len(node.inputs) > 2 else None
        bias = int_bias(ctx, bias_in, da.scale_c.reshape(-1) * db.scale_c.reshape(-1), n)
        if bias is False:
            return False
        c = None if bias is None else ctx.new_const(bias, name + "_bias_int32")
        new = make_node(
            "QGemm",
            [da.q, da.scale, da.zp, db.q, db.scale, db.zp, c, q.scale, q.zp],
            name=name + "_QGemm",
            transB=trans_b,
        )
        ctx.replace([node, q.node], q.node.outputs[0], new)
        return True
    if not per_channel(db, b.shape[1], 1, 2):
        return False
    if q is not None:
        new = make_node(
            "QLinearMatMul",
            [da.q, da.scale, da.zp, db.q, db.scale, db.zp, q.scale, q.zp],
            domain="",
            name=name + "_QLinearMatMul",
        )
        ctx.replace([node, q.node], q.node.outputs[0], new)
        return True
    new = make_node(
        "MatMulIntegerToFloat",
        [da.q, db.q, da.scale, db.scale, da.zp, db.zp],
        name=name + "_MatMulIntegerToFloat",
    )
    ctx.replace([node], y, new)
    return True


def qdq_matmul_fusion(model: Model) -> bool:
    """Fuse the QDQ MatMul / Gemm groups; returns whether it changed the model."""
    return run_on_graphs(model, _visit)
