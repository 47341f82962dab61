"""GELU fusion: the decomposed GELU of the exporters becomes one com.microsoft node.

* erf form  ``0.5 * x * (1 + erf(x / sqrt 2))`` (``x / 1.4142`` or ``x * 0.7071``; the halving and
  the product with x in any association) -> ``Gelu``;
* tanh form ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`` (``Pow(x, 3)`` or
  ``x * x * x``) -> ``FastGelu``.

Only float tensors; every intermediate must be private to the pattern.
"""

from __future__ import annotations

import math

import numpy as np

from onyx.ir.model import Model, Node, Value
from onyx.optimizer._pattern import (
    Ctx,
    close,
    is_op,
    make_node,
    other_input,
    prod,
    run_on_graphs,
    split_const,
)

_SQRT2 = math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def _scaled_input(ctx: Ctx, v: Value) -> Value | None:
    """x when v is x / sqrt(2) or x * (1 / sqrt(2))."""
    p = v.producer
    if is_op(p, "Div"):
        if close(ctx.scalar(p.inputs[1], p.inputs[0]), _SQRT2, 1e-3) and ctx.const(p.inputs[0]) is None:
            return p.inputs[0]
        return None
    if is_op(p, "Mul"):
        sc = split_const(ctx, p)
        if (
            sc is not None
            and sc[1].size == 1
            and ctx.no_broadcast(sc[1], sc[0])
            and close(float(sc[1].reshape(-1)[0]), 1 / _SQRT2, 1e-3)
        ):
            return sc[0]
    return None


def _one_plus(ctx: Ctx, v: Value) -> Node | None:
    """The single consumer Add(v, 1) of v, the 1 a float32 constant (so the pattern is float32:
    onnxruntime's CPU kernels of the fused ops are float32 only)."""
    if not ctx.single_use(v):
        return None
    a = v.uses[0][0]
    if not is_op(a, "Add") or len(a.inputs) != 2:
        return None
    one = ctx.const(other_input(a, v))
    if one is None or one.dtype != np.float32 or not close(ctx.scalar(other_input(a, v), v), 1.0, 1e-6):
        return None
    return a


def _is_half_of(ctx: Ctx, v: Value, x: Value) -> Node | None:
    """The node computing v = x * 0.5 (or x / 2)."""
    p = v.producer
    if is_op(p, "Mul"):
        if (
            other_input(p, x) is not None
            and p.inputs.count(x) == 1
            and close(ctx.scalar(other_input(p, x), x), 0.5, 1e-6)
        ):
            return p
    if is_op(p, "Div") and p.inputs[0] is x and close(ctx.scalar(p.inputs[1], x), 2.0, 1e-6):
        return p
    return None


def _half_x_times(ctx: Ctx, a: Value, x: Value) -> tuple[list[Node], Value] | None:
    """Match 0.5 * x * a (a = 1 + erf/tanh(...)) in its associations; (nodes, result)."""
    if not ctx.single_use(a):
        return None
    m1 = a.uses[0][0]
    if not is_op(m1, "Mul") or len(m1.inputs) != 2:
        return None
    y = other_input(m1, a)
    if y is None:
        return None
    r1 = m1.outputs[0]
    if y is x:
        # (x * a) * 0.5 or (x * a) / 2
        if not ctx.single_use(r1):
            return None
        m2 = r1.uses[0][0]
        if is_op(m2, "Mul") and close(ctx.scalar(other_input(m2, r1), r1), 0.5, 1e-6):
            return [m1, m2], m2.outputs[0]
        if is_op(m2, "Div") and m2.inputs[0] is r1 and close(ctx.scalar(m2.inputs[1], r1), 2.0, 1e-6):
            return [m1, m2], m2.outputs[0]
        return None
    h = _is_half_of(ctx, y, x)
    if h is not None and ctx.single_use(y):
        return [h, m1], r1  # (0.5 * x) * a
    if close(ctx.scalar(y, a), 0.5, 1e-6) and ctx.single_use(r1):
        m2 = r1.uses[0][0]  # (a * 0.5) * x
        if is_op(m2, "Mul") and other_input(m2, r1) is x:
            return [m1, m2], m2.outputs[0]
    return None


def _erf_gelu(ctx: Ctx, erf: Node) -> bool:
    s = erf.inputs[0]
    x = _scaled_input(ctx, s) if s is not None else None
    if x is None or not ctx.single_use(s):
        return False
    add = _one_plus(ctx, erf.outputs[0])
    if add is None:
        return False
    m = _half_x_times(ctx, add.outputs[0], x)
    if m is None:
        return False
    nodes = [s.producer, erf, add, *m[0]]
    if not ctx.private(nodes, m[1]):
        return False
    ctx.replace(nodes, m[1], make_node("Gelu", [x], name=(m[1].producer.name or "gelu") + "_Gelu"))
    return True


def _cube_of(ctx: Ctx, v: Value) -> tuple[Value, list[Node]] | None:
    """x and the nodes when v = x^3 (Pow(x, 3), x * (x * x) or (x * x) * x)."""
    p = v.producer
    if is_op(p, "Pow") and close(ctx.scalar(p.inputs[1], p.inputs[0]), 3.0, 1e-6):
        return p.inputs[0], [p]
    if is_op(p, "Mul"):
        a, b = p.inputs
        for sq, x in ((a, b), (b, a)):
            q = prod(sq, "Mul")
            if q is not None and q.inputs[0] is x and q.inputs[1] is x and ctx.single_use(sq):
                return x, [q, p]
    return None


def _tanh_gelu(ctx: Ctx, tanh: Node) -> bool:
    t_in = tanh.inputs[0]
    mk = prod(t_in, "Mul")
    if mk is None or not ctx.single_use(t_in):
        return False
    sc = split_const(ctx, mk)
    if sc is None or sc[1].size != 1 or not ctx.no_broadcast(sc[1], sc[0]):
        return False
    if not close(float(sc[1].reshape(-1)[0]), _SQRT_2_PI, 1e-3):
        return False
    inner = prod(sc[0], "Add")
    if inner is None or not ctx.single_use(sc[0]):
        return False
    # inner = x + 0.044715 * x^3
    for x, c3 in ((inner.inputs[0], inner.inputs[1]), (inner.inputs[1], inner.inputs[0])):
        mc = prod(c3, "Mul")
        if mc is None or not ctx.single_use(c3):
            continue
        k = split_const(ctx, mc)
        if k is None or k[1].size != 1 or not ctx.no_broadcast(k[1], k[0]):
            continue
        if not close(float(k[1].reshape(-1)[0]), 0.044715, 1e-3):
            continue
        cube = _cube_of(ctx, k[0])
        if cube is None or cube[0] is not x or not ctx.single_use(k[0]):
            continue
        add = _one_plus(ctx, tanh.outputs[0])
        if add is None:
            return False
        m = _half_x_times(ctx, add.outputs[0], x)
        if m is None:
            return False
        nodes = [*cube[1], mc, inner, mk, tanh, add, *m[0]]
        if not ctx.private(nodes, m[1]):
            return False
        ctx.replace(
            nodes, m[1], make_node("FastGelu", [x], name=(m[1].producer.name or "gelu") + "_FastGelu")
        )
        return True
    return False


def _visit(ctx: Ctx, node: Node) -> bool:
    if is_op(node, "Erf"):
        return _erf_gelu(ctx, node)
    if is_op(node, "Tanh"):
        return _tanh_gelu(ctx, node)
    return False


def gelu_fusion(model: Model) -> bool:
    """Fuse decomposed GELUs into com.microsoft Gelu / FastGelu; returns whether it changed."""
    return run_on_graphs(model, _visit)
