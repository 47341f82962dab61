"""Drop the DequantizeLinear / QuantizeLinear pair around an op that only moves or selects values
(MaxPool, Reshape, Transpose, Flatten, Squeeze, Unsqueeze) when both have the same per-tensor scale
and zero point: ``Q(op(DQ(x)))`` -> ``op(x)``, on the 8-bit values themselves. Exact: such an op
commutes with the monotonic DQ, and Q(DQ(v)) = v for equal parameters (as onnxruntime's QDQ
transformer drops these pairs)."""

from __future__ import annotations

from onyx.ir.model import Model, Node
from onyx.optimizer._pattern import Ctx, is_op, make_node, run_on_graphs
from onyx.optimizer._qdq import dq_of, q_after

MOVERS = ("MaxPool", "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze")


def _visit(ctx: Ctx, node: Node) -> bool:
    if not is_op(node, *MOVERS) or not node.inputs or len(node.outputs) != 1:
        return False
    if node.op_type == "MaxPool" and ctx.opset < 12:  # 8-bit MaxPool from opset 12
        return False
    dq = dq_of(ctx, node.inputs[0])
    q = q_after(ctx, node.outputs[0])
    if dq is None or q is None or not dq.same(q):
        return False
    new = make_node(
        node.op_type, [dq.q, *node.inputs[1:]], domain="", name=(node.name or node.op_type) + "_q"
    )
    new.attributes.update(node.attributes)
    ctx.replace([node, q.node], q.node.outputs[0], new)
    return True


def qdq_propagation(model: Model) -> bool:
    """Run value-moving ops on quantized values where a DQ/Q pair of equal parameters surrounds them."""
    return run_on_graphs(model, _visit)
