"""Pattern-matching helpers shared by the EXTENDED-level fusion passes.

A fusion finds a connected group of nodes computing one result, checks that nothing outside the
group reads their intermediate values, and replaces the group by one node that takes over the
group's final output :class:`Value` (so its name, type and uses stay as they were). Nodes left dead
upstream (shape arithmetic that fed only the group) are swept afterwards.

Constants are initializers that no feed can override, or outputs of ``Constant`` nodes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import numpy as np

from onyx.errors import OnyxError
from onyx.ir.model import AttrType, Function, Graph, Model, Node, Value
from onyx.ir.tensor import Tensor
from onyx.ir.types import TensorType
from onyx.ops.binding import is_pure, opset_for
from onyx.optimizer._util import constant_value
from onyx.shape_inference import type_new_nodes

MS = "com.microsoft"
_DEFAULT = ("", "ai.onnx")


def is_op(node: Node | None, *op_types: str, domain: str | None = None) -> bool:
    if node is None or node.op_type not in op_types:
        return False
    d = node.domain or ""
    return d in _DEFAULT if domain is None else d == domain


def prod(v: Value | None, *op_types: str, domain: str | None = None) -> Node | None:
    """The producer of ``v`` when it is one of ``op_types``."""
    if v is None:
        return None
    p = v.producer
    return p if is_op(p, *op_types, domain=domain) else None


class Ctx:
    """One graph being rewritten: which values are graph inputs/outputs, what is constant."""

    def __init__(self, model: Model, graph: Graph, function: Function | None = None):
        self.model = model
        self.graph = graph
        self.function = function  # the model-local function whose body this graph is (or is in)
        self.opsets = model.opsets if function is None else {**model.opsets, **function.opsets()}
        self.opset = self.opsets.get("", 1)
        # a subgraph may list an outer value as its output without any node reading it
        self.output_ids = {id(v) for g in _all_graphs(model) for v in g.outputs}
        self.output_ids |= {id(v) for f in model.functions for v in f.outputs}
        self.input_ids = {id(v) for v in graph.inputs}
        if function is not None:
            self.input_ids |= {id(v) for v in function.inputs}

    # -- constants --------------------------------------------------------------------------
    def const(self, v: Value | None) -> np.ndarray | None:
        return constant_value(v, self.input_ids)

    def scalar(self, v: Value | None, like: Value | None = None) -> float | None:
        """The value of a one-element float/int constant; with ``like``, only when combining it
        with ``like`` broadcasts nothing (0-d, or no more dims than ``like``'s known rank)."""
        c = self.const(v)
        if c is None or c.size != 1 or c.dtype.kind not in "fiu":
            return None
        if like is not None and not self.no_broadcast(c, like):
            return None
        return float(c.reshape(-1)[0])

    def no_broadcast(self, c: np.ndarray, like: Value) -> bool:
        """Whether a one-element constant ``c`` leaves ``like``'s shape unchanged when combined."""
        if c.ndim == 0:
            return True
        r = self.rank(like)
        return r is not None and c.ndim <= r

    def ints(self, v: Value | None) -> list[int] | None:
        c = self.const(v)
        if c is None or c.dtype.kind not in "iu":
            return None
        return [int(x) for x in c.reshape(-1)]

    # -- uses -------------------------------------------------------------------------------
    def is_output(self, v: Value) -> bool:
        return id(v) in self.output_ids

    def single_use(self, v: Value) -> bool:
        return len(v.uses) == 1 and id(v) not in self.output_ids

    def private(self, nodes: Iterable[Node], keep: Value, also: Iterable[Value] = ()) -> bool:
        """Whether every output of ``nodes`` except ``keep`` (and ``also``) is read only by ``nodes``."""
        nodes = list(nodes)
        ids = {id(n) for n in nodes}
        skip = {id(keep)} | {id(v) for v in also}
        for n in nodes:
            for v in n.outputs:
                if id(v) in skip:
                    continue
                if id(v) in self.output_ids:
                    return False
                if any(id(u) not in ids for u, _ in v.uses):
                    return False
        return True

    # -- types ------------------------------------------------------------------------------
    def dims(self, v: Value | None) -> list | None:
        """Dims of ``v`` (ints, symbol names or None) from a constant or its type (declared, or left by
        the shape-inference stage that runs before the optimizer)."""
        if v is None:
            return None
        c = self.const(v) if v.producer is None or is_op(v.producer, "Constant") else None
        if c is not None:
            return list(c.shape)
        t = v.type
        return list(t.shape.dims) if isinstance(t, TensorType) and t.shape is not None else None

    def rank(self, v: Value | None) -> int | None:
        d = self.dims(v)
        return None if d is None else len(d)

    def elem(self, v: Value | None) -> int | None:
        if v is None:
            return None
        t = v.type
        if isinstance(t, TensorType) and t.elem_type:
            return int(t.elem_type)
        c = self.const(v)
        if c is not None:
            from onyx.ir.dtypes import from_numpy

            try:
                return int(from_numpy(c.dtype))
            except OnyxError:
                return None
        return None

    def pure(self, node: Node) -> bool:
        """Whether ``node``'s result is a function of its inputs: impure ones are never swept."""
        return is_pure(node, opset_for(self.opsets, node.domain))

    def same_dims(self, a: Value, b: Value) -> bool:
        """Whether ``a`` and ``b`` are known to have equal shapes (every dim known, equal)."""
        da, db = self.dims(a), self.dims(b)
        if da is None or db is None or len(da) != len(db):
            return False
        return all(x is not None and y is not None and _dim_eq(x, y) for x, y in zip(da, db))

    # -- rewriting --------------------------------------------------------------------------
    def replace(self, nodes: list[Node], out: Value, new: Node | list[Node], at: Node | None = None) -> None:
        """Replace ``nodes`` (a group whose only external result is ``out``) by ``new``: the last
        new node takes ``out`` over as its first output; the new nodes go where ``out``'s producer
        was; the group is removed and what fed only the group is swept."""
        g = self.graph
        news = new if isinstance(new, list) else [new]
        last = out.producer
        assert last is not None
        pos = g.nodes.index(at if at is not None else last)
        # take the value over: the old producer loses it
        last.outputs[last.outputs.index(out)] = Value(out.name + "__fused_away")
        out.producer = news[-1]
        out.index = 0
        news[-1].outputs.insert(0, out)
        for k, v in enumerate(news[-1].outputs):
            v.index = k
        for k, n in enumerate(news):
            g.insert_node(pos + k, n)
        feeders = [v for n in nodes for v in n.inputs if v is not None]
        ids = {id(n) for n in nodes}
        live = {id(v) for nn in news for v in nn.outputs}
        gone = [v for n in nodes for v in n.outputs if id(v) not in live]
        for n in nodes:
            n.detach()
            n.graph = None
        g.nodes[:] = [n for n in g.nodes if id(n) not in ids]
        self.drop_value_info(gone)
        self.sweep(feeders)
        if any(n.domain == MS for n in news):
            ensure_ms_opset(self.model)
            if self.function is not None and not any(d == MS for d, _ in self.function.opset_imports):
                self.function.opset_imports.append((MS, 1))
        # the values kept keep their types; those the new nodes make get them from the ops' rules
        type_new_nodes(self.model, news, self.opsets)

    def sweep(self, values: Iterable[Value]) -> None:
        """Remove the producers of ``values`` (recursively upwards) that nothing reads any more."""
        g = self.graph
        dead: set[int] = set()
        values = [v for v in values if v is not None]
        stack = list(values)
        while stack:
            v = stack.pop()
            values.append(v)
            p = v.producer
            if p is None or p.graph is not g or id(p) in dead or not self.pure(p):
                continue
            if any(o.uses or id(o) in self.output_ids for o in p.outputs):
                continue
            if any(True for _ in p.subgraphs()):
                continue
            dead.add(id(p))
            p.detach()
            stack.extend(i for i in p.inputs if i is not None)
        if dead:
            gone = []
            for n in g.nodes:
                if id(n) in dead:
                    n.graph = None
                    gone.extend(n.outputs)
            g.nodes[:] = [n for n in g.nodes if id(n) not in dead]
            self.drop_value_info(gone)
        unused = []
        for v in {id(v): v for v in values}.values():
            if v.producer is None and not v.uses and id(v) not in self.output_ids:
                if id(v) not in self.input_ids and g.initializers.get(v.name) is v:
                    del g.initializers[v.name]
                    unused.append(v)
        self.drop_value_info(unused)

    def drop_value_info(self, values: Iterable[Value]) -> None:
        """Remove ``values`` from the graph's value_info (overrides are keyed by value, not position)."""
        ids = {id(v) for v in values}
        g = self.graph
        if any(id(v) in ids for v in g.value_info):
            g.value_info[:] = [v for v in g.value_info if id(v) not in ids]

    def new_const(self, array: np.ndarray, hint: str) -> Value:
        """A new constant with a fresh name: an initializer, or (in a function body, which has
        none) the output of a Constant node put first in the body."""
        name = fresh_name(self.graph, hint)
        arr = np.asarray(array)
        t = Tensor.from_numpy(arr, name)
        from onyx.ir.types import Shape

        if self.function is not None:
            from onyx.ir.model import Attr

            v = Value(name, TensorType(t.data_type, Shape(t.dims)))
            node = Node("Constant", [], [v], {"value": Attr("value", AttrType.TENSOR, t)}, name=name)
            self.graph.insert_node(0, node)
            return v
        v = Value(name, TensorType(t.data_type, Shape(t.dims)), const=t)
        self.graph.add_initializer(v)
        return v


def _dim_eq(x, y) -> bool:
    """Whether two known dims (ints, symbol names or symbols) are equal."""
    if x is None or y is None:
        return False
    xi, yi = isinstance(x, int | np.integer), isinstance(y, int | np.integer)
    if xi or yi:
        return xi and yi and int(x) == int(y)
    return str(x) == str(y)


_counter = [0]


def fresh_name(graph: Graph, hint: str) -> str:
    names = set(graph.initializers)
    for n in graph.nodes:
        names.update(v.name for v in n.outputs)
    names.update(v.name for v in graph.inputs)
    while True:
        _counter[0] += 1
        name = f"{hint}__ext{_counter[0]}"
        if name not in names:
            return name


def ensure_ms_opset(model: Model) -> None:
    """Import com.microsoft version 1 when the model does not yet."""
    if not any(d == MS for d, _ in model.opset_imports):
        model.opset_imports.append((MS, 1))


def _all_graphs(model: Model) -> list[Graph]:
    out = list(graphs(model))
    for f in model.functions:
        out.append(f.graph)
    return out


def graphs(model: Model) -> Iterator[Graph]:
    """The main graph and, recursively, its subgraphs (function bodies are left alone)."""
    stack = [model.graph]
    while stack:
        g = stack.pop()
        yield g
        for n in g.nodes:
            stack.extend(n.subgraphs())


def _subgraphs(g: Graph) -> Iterator[Graph]:
    stack = [g]
    while stack:
        x = stack.pop()
        yield x
        for n in x.nodes:
            stack.extend(n.subgraphs())


def run_on_graphs(model: Model, fn) -> bool:
    """Apply ``fn(ctx, node) -> bool`` to every node of every graph: the main graph, subgraphs at
    any depth and model-local function bodies (a snapshot of each node list). A node whose
    attributes refer to a function's attributes does not match (``attr`` raises LookupError)."""
    changed = False
    todo = [(g, None) for g in graphs(model)]
    todo += [(g, f) for f in model.functions for g in _subgraphs(f.graph)]
    for g, f in todo:
        ctx = Ctx(model, g, f)
        for node in list(g.nodes):
            if node.graph is not g:
                continue
            try:
                if fn(ctx, node):
                    changed = True
            except LookupError:
                continue
    return changed


def other_input(node: Node, v: Value) -> Value | None:
    """For a binary node reading ``v``, its other input."""
    a, b = node.inputs[0], node.inputs[1]
    if a is v:
        return b
    if b is v:
        return a
    return None


def split_const(ctx: Ctx, node: Node) -> tuple[Value, np.ndarray] | None:
    """For a binary node with exactly one constant input: (the other input, the constant)."""
    if len(node.inputs) != 2 or node.inputs[0] is None or node.inputs[1] is None:
        return None
    a, b = node.inputs
    ca, cb = ctx.const(a), ctx.const(b)
    if cb is not None and ca is None:
        return a, cb
    if ca is not None and cb is None:
        return b, ca
    return None


def close(x: float | None, want: float, rel: float = 1e-4) -> bool:
    return x is not None and math.isfinite(x) and abs(x - want) <= rel * abs(want)


def attr(node: Node, name: str, default=None):
    a = node.attributes.get(name)
    if a is None:
        return default
    if a.ref_attr_name:
        raise LookupError(name)
    v = a.value
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    return v


def make_node(
    op_type: str,
    inputs: list[Value | None],
    n_out: int = 1,
    domain: str = MS,
    name: str | None = None,
    **attrs,
) -> Node:
    """A node whose first output is filled in by :meth:`Ctx.replace` (the other outputs are fresh)."""
    from onyx.ir.builder import make_attr

    outs = [Value(f"{name or op_type}_out{k}") for k in range(1, n_out)]
    while inputs and inputs[-1] is None:
        inputs = inputs[:-1]
    return Node(
        op_type,
        list(inputs),
        outs,
        {k: make_attr(k, v) for k, v in attrs.items() if v is not None},
        domain=domain,
        name=name,
    )


def float_elem(ctx: Ctx, v: Value) -> bool:
    """Whether ``v`` is known to be float32/float16/float64/bfloat16."""
    return ctx.elem(v) in (1, 10, 11, 16)
