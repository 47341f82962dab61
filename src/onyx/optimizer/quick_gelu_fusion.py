"""QuickGelu fusion: ``x * Sigmoid(alpha * x)`` (alpha a float32 scalar constant; SiLU/Swish when
there is no scaling: alpha = 1) -> com.microsoft ``QuickGelu(x, alpha)``. Float32 only."""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Model, Node
from onyx.optimizer._pattern import Ctx, is_op, make_node, other_input, prod, run_on_graphs, split_const


def _visit(ctx: Ctx, sig: Node) -> bool:
    if not is_op(sig, "Sigmoid"):
        return False
    s_in, s_out = sig.inputs[0], sig.outputs[0]
    if s_in is None or not ctx.single_use(s_out):
        return False
    mul = s_out.uses[0][0]
    if not is_op(mul, "Mul") or len(mul.inputs) != 2:
        return False
    x = other_input(mul, s_out)
    if x is None or x is s_out:
        return False
    nodes = [sig, mul]
    alpha = 1.0
    if s_in is not x:
        scale = prod(s_in, "Mul")
        if scale is None or not ctx.single_use(s_in):
            return False
        sc = split_const(ctx, scale)
        if sc is None or sc[0] is not x or sc[1].size != 1 or sc[1].dtype != np.float32:
            return False
        if not ctx.no_broadcast(sc[1], x):
            return False
        alpha = float(sc[1].reshape(-1)[0])
        nodes.insert(0, scale)
    elif ctx.elem(x) != 1:
        return False
    out = mul.outputs[0]
    if not ctx.private(nodes, out):
        return False
    ctx.replace(nodes, out, make_node("QuickGelu", [x], name=(mul.name or "mul") + "_QuickGelu", alpha=alpha))
    return True


def quick_gelu_fusion(model: Model) -> bool:
    """Fuse x * sigmoid(alpha * x) into QuickGelu; returns whether it changed."""
    return run_on_graphs(model, _visit)
