"""LayerNormalization fusion: the decomposed form over the last axis

    mean = ReduceMean(x, [-1]); d = x - mean; var = ReduceMean(d^2, [-1])   (Pow(d, 2) or d * d)
    y = d / Sqrt(var + eps) [* gamma] [+ beta]

becomes ``LayerNormalization(x, gamma, beta, axis=-1, epsilon=eps)`` (ONNX opset >= 17 only: older
models have no such operator). gamma and beta must be 1-D constants (or absent: ones, zeros).
"""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Model, Node, Value
from onyx.optimizer._pattern import Ctx, attr, float_elem, is_op, make_node, other_input, prod, run_on_graphs


def _last_axis_mean(ctx: Ctx, node: Node, x: Value) -> bool:
    """node is ReduceMean(x) over the last axis only, keepdims."""
    if not is_op(node, "ReduceMean") or node.inputs[0] is not x:
        return False
    try:
        if attr(node, "keepdims", 1) != 1 or attr(node, "noop_with_empty_axes", 0):
            return False
        axes = attr(node, "axes")
    except LookupError:
        return False
    if len(node.inputs) > 1 and node.inputs[1] is not None:
        axes = ctx.ints(node.inputs[1])
    if axes is None or len(axes) != 1:
        return False
    if axes[0] == -1:
        return True
    r = ctx.rank(x)
    return r is not None and axes[0] == r - 1


def _visit(ctx: Ctx, mean: Node) -> bool:
    if ctx.opset < 17 or not is_op(mean, "ReduceMean"):
        return False
    x = mean.inputs[0]
    if x is None or not _last_axis_mean(ctx, mean, x) or not float_elem(ctx, x):
        return False
    mv = mean.outputs[0]
    if len(mv.uses) != 1 or ctx.is_output(mv):
        return False
    sub = mv.uses[0][0]
    if not is_op(sub, "Sub") or sub.inputs[0] is not x or sub.inputs[1] is not mv:
        return False
    d = sub.outputs[0]
    users = list({id(u): u for u, _ in d.uses}.values())
    if len(users) != 2 or ctx.is_output(d):
        return False
    sq = next(
        (u for u in users if is_op(u, "Pow") or (is_op(u, "Mul") and u.inputs[0] is d and u.inputs[1] is d)),
        None,
    )
    div = next((u for u in users if is_op(u, "Div") and u.inputs[0] is d), None)
    if sq is None or div is None or sq is div:
        return False
    if is_op(sq, "Pow"):
        e = ctx.scalar(sq.inputs[1], d)
        if e != 2.0:
            return False
    sv = sq.outputs[0]
    if not ctx.single_use(sv):
        return False
    var = sv.uses[0][0]
    if not _last_axis_mean(ctx, var, sv) or not ctx.single_use(var.outputs[0]):
        return False
    add = var.outputs[0].uses[0][0]
    if not is_op(add, "Add"):
        return False
    eps = ctx.scalar(other_input(add, var.outputs[0]), var.outputs[0])
    if eps is None or not 0 < eps < 1 or not ctx.single_use(add.outputs[0]):
        return False
    sqrt = add.outputs[0].uses[0][0]
    if not is_op(sqrt, "Sqrt") or div.inputs[1] is not sqrt.outputs[0] or not ctx.single_use(sqrt.outputs[0]):
        return False
    nodes = [mean, sub, sq, var, add, sqrt, div]
    out = div.outputs[0]
    dt = None
    gamma = beta = None
    if ctx.single_use(out) and is_op(out.uses[0][0], "Mul"):
        m = out.uses[0][0]
        g = ctx.const(other_input(m, out))
        if g is not None and g.ndim == 1 and g.dtype.kind == "f":
            gamma = other_input(m, out)
            dt = g.dtype
            nodes.append(m)
            out = m.outputs[0]
            if ctx.single_use(out) and is_op(out.uses[0][0], "Add"):
                a = out.uses[0][0]
                b = ctx.const(other_input(a, out))
                if b is not None and b.ndim == 1 and b.shape == g.shape and b.dtype == g.dtype:
                    beta = other_input(a, out)
                    nodes.append(a)
                    out = a.outputs[0]
    n = ctx.dims(x)
    if gamma is None:
        if not n or not isinstance(n[-1], int) or x.type is None:
            return False
        from onyx.ir.dtypes import to_numpy

        try:
            dt = np.dtype(to_numpy(ctx.elem(x)))
        except Exception:  # noqa: BLE001
            return False
        gamma = ctx.new_const(np.ones(n[-1], dt), "ln_scale")
    elif n and isinstance(n[-1], int) and n[-1] != ctx.const(gamma).shape[0]:
        return False
    elif not n or not isinstance(n[-1], int):
        # without a known last dim, the 1-D gamma must at least not broadcast the result wider
        if ctx.const(gamma).shape[0] != 1 and ctx.rank(x) is None:
            return False
    if ctx.elem(x) != ctx.elem(gamma) or not ctx.private(nodes, out):
        return False
    ctx.replace(
        nodes,
        out,
        make_node(
            "LayerNormalization",
            [x, gamma, beta],
            domain="",
            name=(mean.name or "ln") + "_LayerNorm",
            axis=-1,
            epsilon=float(eps),
        ),
    )
    return True


def layer_norm_fusion(model: Model) -> bool:
    """Fuse decomposed layer normalisations; returns whether it changed."""
    return run_on_graphs(model, _visit)


_ = prod
