"""BiasGelu fusion: ``Gelu(x + b)`` with b a 1-D constant over x's last axis -> com.microsoft
``BiasGelu(x, b)`` (erf Gelu, com.microsoft or ONNX ``Gelu`` with approximate="none") or
``FastGelu(x, b)`` (com.microsoft FastGelu without a bias)."""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Model, Node
from onyx.optimizer._pattern import MS, Ctx, attr, is_op, make_node, prod, run_on_graphs


def _last_dim_is(ctx: Ctx, x, n: int) -> bool:
    d = ctx.dims(x)
    if d is not None and d and isinstance(d[-1], int) and d[-1] == n:
        return True
    mm = prod(x, "MatMul")  # x = MatMul(a, W) with W (K, n) constant
    if mm is not None:
        w = ctx.const(mm.inputs[1])
        return w is not None and w.ndim == 2 and w.shape[1] == n and (ctx.rank(mm.inputs[0]) or 0) >= 2
    return False


def _visit(ctx: Ctx, node: Node) -> bool:
    if is_op(node, "Gelu", domain=MS):
        target = "BiasGelu"
    elif is_op(node, "Gelu") and attr(node, "approximate", "none") == "none":
        target = "BiasGelu"
    elif is_op(node, "FastGelu", domain=MS) and (len(node.inputs) < 2 or node.inputs[1] is None):
        target = "FastGelu"
    else:
        return False
    s = node.inputs[0]
    add = prod(s, "Add")
    if add is None or not ctx.single_use(s):
        return False
    for x, b in ((add.inputs[0], add.inputs[1]), (add.inputs[1], add.inputs[0])):
        c = ctx.const(b)
        if c is None or c.ndim != 1 or ctx.const(x) is not None:
            continue
        if c.dtype != np.float32 or not _last_dim_is(ctx, x, c.shape[0]):
            continue
        ex, eb = ctx.elem(x), ctx.elem(b)
        if ex is None or ex != eb:
            continue
        ctx.replace(
            [add, node], node.outputs[0], make_node(target, [x, b], name=(node.name or "gelu") + "_Bias")
        )
        return True
    return False


def bias_gelu_fusion(model: Model) -> bool:
    """Fold a bias Add into the Gelu that follows it; returns whether it changed."""
    return run_on_graphs(model, _visit)
