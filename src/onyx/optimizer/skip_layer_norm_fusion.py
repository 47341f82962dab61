"""SkipLayerNormalization fusion: ``LayerNormalization(a + b)`` over the last axis of a 3-D float
tensor, a and b of the same known shape, becomes com.microsoft ``SkipLayerNormalization(a, b,
gamma, beta[, bias])``; a bias ``Add(MatMul(...), bias)`` feeding the sum is folded in as ``bias``.
When the sum is read elsewhere too (a residual stream), the fused node's fourth output
(input_skip_bias_sum) takes it over.
"""

from __future__ import annotations

from onyx.ir.model import Model, Node, Value
from onyx.optimizer._pattern import Ctx, _dim_eq, attr, is_op, make_node, prod, run_on_graphs


def _skip_fits(ctx: Ctx, skip: Value, full: list) -> bool:
    """skip is (B, S, H) like the input, or (1, S, H): rank 3 with S and H known equal to the
    input's (its batch dim may be unknown: the Add broadcast, so it is B or 1)."""
    d = ctx.dims(skip)
    if d is None or len(d) != 3:
        return False
    if not all(x is not None and y is not None and _dim_eq(x, y) for x, y in zip(d[1:], full[1:])):
        return False
    return True


def _visit(ctx: Ctx, ln: Node) -> bool:
    if not is_op(ln, "LayerNormalization"):
        return False
    try:
        axis = attr(ln, "axis", -1)
        eps = attr(ln, "epsilon", 1e-5)
        stash = attr(ln, "stash_type", 1)
    except LookupError:
        return False
    if stash != 1 or any(ctx.is_output(v) or v.uses for v in ln.outputs[1:]):
        return False
    s = ln.inputs[0]
    add = prod(s, "Add")
    if add is None or len(ln.inputs) < 2:
        return False
    a, b = add.inputs
    if a is None or b is None or a is b:
        return False
    if not ctx.same_dims(a, s):
        a, b = b, a  # the input must have the sum's shape; the skip may be (1, S, H)
    da = ctx.dims(a)
    if da is None or len(da) != 3 or not ctx.same_dims(a, s) or not _skip_fits(ctx, b, da):
        return False
    if axis not in (-1, 2) or ctx.elem(a) != 1 or ctx.elem(b) != ctx.elem(a):
        return False
    gamma = ln.inputs[1]
    beta = ln.inputs[2] if len(ln.inputs) > 2 else None
    g = ctx.const(gamma)
    if g is None or g.ndim != 1 or not isinstance(da[-1], int) or g.shape[0] != da[-1]:
        return False
    if beta is not None:
        bb = ctx.const(beta)
        if bb is None or bb.shape != g.shape:
            return False
    nodes: list[Node] = [add, ln]
    bias: Value | None = None
    # fold a bias add into the fused node: a = Add(y, c) with c 1-D constant and y of a's shape
    for k, v in enumerate((a, b)):
        p = prod(v, "Add")
        if p is None or not ctx.single_use(v):
            continue
        for y, c in ((p.inputs[0], p.inputs[1]), (p.inputs[1], p.inputs[0])):
            cc = ctx.const(c)
            if (
                cc is not None
                and cc.ndim == 1
                and cc.shape == g.shape
                and ctx.const(y) is None
                and ctx.same_dims(y, v)
            ):
                bias = c
                nodes.insert(0, p)
                if k == 0:
                    a = y
                else:
                    b = y
                break
        if bias is not None:
            break
    sum_used = bool([u for u, _ in s.uses if u is not ln]) or ctx.is_output(s)
    if not ctx.private(nodes, ln.outputs[0], also=[s]):
        return False
    inputs = [a, b, gamma, beta, bias]
    new = make_node(
        "SkipLayerNormalization",
        inputs,
        n_out=4 if sum_used else 1,
        name=(ln.name or "ln") + "_SkipLayerNorm",
        epsilon=float(eps),
    )
    if sum_used:
        # the sum keeps its Value (name, uses); the fused node produces it as output 3
        for v in new.outputs[:2]:
            v.name = ""
        add_out = s
        add.outputs[0] = Value(s.name + "__fused_away")
        new.outputs[2] = add_out
        add_out.producer = new
    ctx.replace(nodes, ln.outputs[0], new, at=add)
    return True


def skip_layer_norm_fusion(model: Model) -> bool:
    """Fuse Add + LayerNormalization into SkipLayerNormalization; returns whether it changed."""
    return run_on_graphs(model, _visit)
