"""Gradient (ai.onnx.preview.training): dY/dX for the graph between ``xs``/``zs`` and ``y``.

The kernel finds, in its own graph, the nodes that compute ``y`` from the tensors named in ``xs`` and
``zs``, recomputes them forward from the values it is given, and runs reverse-mode differentiation with
the vector-Jacobian products below. Differentiable ops: Add, Sub, Mul, Div, Neg, Identity, MatMul, Gemm,
Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Pow, ReduceSum, ReduceMean; any other op on the path raises
NotImplemented naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from onyx.errors import InvalidGraph
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ops.registry import op, shape_rule

PREVIEW = "ai.onnx.preview.training"


def _unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum a broadcast gradient back down to ``shape``."""
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, d in enumerate(shape):
        if d == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g.reshape(shape)


def _axes(node, ins, x) -> tuple[int, ...] | None:
    axes = node.attr("axes", None)
    if axes is None and len(ins) > 1 and ins[1] is not None:
        axes = [int(a) for a in np.asarray(ins[1]).reshape(-1)]
    if not axes:
        return None
    return tuple(a % x.ndim for a in axes)


def _reduce_grad(node, ins, g, mean: bool) -> list[Any]:
    x = ins[0]
    axes = _axes(node, ins, x)
    keep = node.attr("keepdims", 1)
    red = axes if axes is not None else tuple(range(x.ndim))
    if not keep:
        for a in sorted(red):
            g = np.expand_dims(g, a)
    out = np.broadcast_to(g, x.shape).astype(x.dtype)
    if mean:
        out = out / max(1, int(np.prod([x.shape[a] for a in red])))
    return [out]


def _matmul_grad(a, b, g):
    a2 = a if a.ndim > 1 else a[None, :]
    b2 = b if b.ndim > 1 else b[:, None]
    g2 = g
    if a.ndim == 1:
        g2 = np.expand_dims(g2, -2)
    if b.ndim == 1:
        g2 = np.expand_dims(g2, -1)
    ga = g2 @ np.swapaxes(b2, -1, -2)
    gb = np.swapaxes(a2, -1, -2) @ g2
    ga = ga.reshape(ga.shape[:-2] + (a.shape[-1],)) if a.ndim == 1 else ga
    gb = gb.reshape(gb.shape[:-2] + (b.shape[0],)) if b.ndim == 1 else gb
    return [_unbroadcast(ga, a.shape), _unbroadcast(gb, b.shape)]


def _gemm_grad(node, ins, g):
    a, b = ins[0], ins[1]
    alpha, beta = node.attr("alpha", 1.0), node.attr("beta", 1.0)
    ta, tb = node.attr("transA", 0), node.attr("transB", 0)
    ap = a.T if ta else a
    bp = b.T if tb else b
    gap = alpha * g @ bp.T
    gbp = alpha * ap.T @ g
    out = [gap.T if ta else gap, gbp.T if tb else gbp]
    if len(ins) > 2 and ins[2] is not None:
        out.append(_unbroadcast(beta * g, ins[2].shape))
    return out


# op type -> (node, inputs, outputs, output gradient) -> input gradients
VJP: dict[str, Callable[..., list[Any]]] = {
    "Add": lambda n, i, o, g: [_unbroadcast(g, i[0].shape), _unbroadcast(g, i[1].shape)],
    "Sub": lambda n, i, o, g: [_unbroadcast(g, i[0].shape), _unbroadcast(-g, i[1].shape)],
    "Mul": lambda n, i, o, g: [_unbroadcast(g * i[1], i[0].shape), _unbroadcast(g * i[0], i[1].shape)],
    "Div": lambda n, i, o, g: [
        _unbroadcast(g / i[1], i[0].shape),
        _unbroadcast(-g * i[0] / (i[1] * i[1]), i[1].shape),
    ],
    "Neg": lambda n, i, o, g: [-g],
    "Identity": lambda n, i, o, g: [g],
    "MatMul": lambda n, i, o, g: _matmul_grad(i[0], i[1], g),
    "Gemm": lambda n, i, o, g: _gemm_grad(n, i, g),
    "Relu": lambda n, i, o, g: [g * (i[0] > 0)],
    "Sigmoid": lambda n, i, o, g: [g * o[0] * (1 - o[0])],
    "Tanh": lambda n, i, o, g: [g * (1 - o[0] * o[0])],
    "Exp": lambda n, i, o, g: [g * o[0]],
    "Log": lambda n, i, o, g: [g / i[0]],
    "Sqrt": lambda n, i, o, g: [g / (2 * o[0])],
    "Pow": lambda n, i, o, g: [
        _unbroadcast(g * i[1] * np.power(i[0], i[1] - 1), i[0].shape),
        _unbroadcast(g * o[0] * np.log(np.where(i[0] > 0, i[0], 1)), i[1].shape),
    ],
    "ReduceSum": lambda n, i, o, g: _reduce_grad(n, i, g, mean=False),
    "ReduceMean": lambda n, i, o, g: _reduce_grad(n, i, g, mean=True),
}


def _forward_nodes(graph, y_value, leaves: set[int]) -> list:
    """The nodes of ``graph`` on the paths into ``y_value``, in graph order, stopping at ``leaves``."""
    needed: set[int] = set()
    stack = [y_value]
    seen: set[int] = set()
    while stack:
        v = stack.pop()
        if id(v) in seen or id(v) in leaves:
            continue
        seen.add(id(v))
        p = v.producer
        if p is None or p.graph is not graph:
            continue
        needed.add(id(p))
        stack.extend(x for x in p.inputs if x is not None)
    return [n for n in graph.nodes if id(n) in needed]


def _run_node(node, args, opsets):
    from onyx.ops.binding import bind, opset_for

    res = bind(node, opset_for(opsets, node.domain))(*args)
    return list(res) if isinstance(res, tuple | list) else [res]


def _value_of(v, env: dict[int, Any]) -> Any:
    if v is None:
        return None
    if id(v) in env:
        return env[id(v)]
    return v.const.numpy() if v.const is not None else None


@op("Gradient", domain=PREVIEW, since=1)
def gradient(*inputs, xs, y, zs=None, _node=None, _ctx=None):
    graph = _node.graph if _node is not None else None
    if graph is None:
        raise InvalidGraph("Gradient must run inside a graph")
    zs = zs or []
    if len(inputs) != len(xs) + len(zs):
        raise InvalidGraph(f"Gradient: {len(inputs)} inputs for xs {xs} and zs {zs}")
    values = graph.values()
    # outer-scope or producer lookups by name: the node's own inputs are the xs/zs values
    named = {name: v for name, v in zip(list(xs) + list(zs), _node.inputs) if v is not None}
    y_value = values.get(y)
    if y_value is None:
        raise InvalidGraph(f"Gradient: y {y!r} is not a value of the graph")
    leaves = {id(v) for v in named.values()}
    nodes = _forward_nodes(graph, y_value, leaves)
    env: dict[int, Any] = {id(named[n]): np.asarray(x) for n, x in zip(list(xs) + list(zs), inputs)}
    model_opsets = (_ctx.extra.get("opsets") if _ctx is not None else None) or {"": 21}
    for n in nodes:
        args = []
        for v in n.inputs:
            if v is None:
                args.append(None)
            elif id(v) in env:
                args.append(env[id(v)])
            elif v.const is not None:
                args.append(v.const.numpy())
            else:
                raise InvalidGraph(f"Gradient: {y!r} depends on {v.name!r}, which is not in xs or zs")
        for v, r in zip(n.outputs, _run_node(n, args, model_opsets)):
            env[id(v)] = r
    grads: dict[int, Any] = {id(y_value): np.ones_like(env[id(y_value)])}
    for n in reversed(nodes):
        g = None
        for v in n.outputs:
            if id(v) in grads:
                g = grads[id(v)] if g is None else g
        if g is None:
            continue
        rule = VJP.get(n.op_type)
        if rule is None:
            raise OnyxNotImplemented(f"Gradient: no derivative for {n.describe()}")
        ins = [_value_of(v, env) for v in n.inputs]
        outs = [env[id(v)] for v in n.outputs]
        for v, gi in zip(n.inputs, rule(n, ins, outs, g)):
            if v is None or gi is None:
                continue
            grads[id(v)] = grads[id(v)] + gi if id(v) in grads else gi
    result = []
    for name, x in zip(xs, inputs):
        gx = grads.get(id(named[name]))
        result.append(
            np.zeros_like(np.asarray(x)) if gx is None else np.asarray(gx, dtype=np.asarray(x).dtype)
        )
    return tuple(result) if len(result) != 1 else result[0]


@shape_rule("Gradient", domain=PREVIEW)
def _gradient_shape(ctx) -> None:
    """Output i is dY/dxs[i]: the type and shape of input i (the value of xs[i])."""
    xs = ctx.attr("xs") or []
    if ctx.num_outputs > len(xs):
        ctx.fail(f"{ctx.num_outputs} outputs for {len(xs)} xs")
    for i in range(ctx.num_outputs):
        ctx.same_as_input(i, i)
