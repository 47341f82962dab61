"""The converter's machinery: walking each node through the opset versions between two opsets.

Every default-domain node is moved one schema change at a time. At each version ``b`` of its operator
between the source and the target opset, an adapter registered for ``(op, b)`` rewrites it (``up`` from
the semantics before ``b`` to those of ``b``, ``down`` the other way), or replaces it by nodes of other
operators, which are then converted on from the opset they are written in. Whatever the adapter did, the
node must then fit the schema on the far side of ``b``: attributes that do not exist there are dropped
when they hold their default and refused otherwise; inputs and outputs past the schema's count are
refused. After the walk each node's inputs and outputs are checked against the target version's types
(element types, and sequences or optionals where only tensors are taken).
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument, NotImplemented
from onyx.ir.dtypes import DataType
from onyx.ir.model import Attr, AttrType, Graph, Model, Node, Value
from onyx.ir.tensor import Tensor
from onyx.ir.types import Shape, TensorType, TypeBase
from onyx.version_converter import _spec

DEFAULT_DOMAINS = ("", "ai.onnx", None)
WRITTEN_AT = 17  # the opset decompositions write their nodes in (Reduce* with an axes attribute)

Adapter = Callable[[Node, "Converter"], "Replacement | None"]
_UP: dict[tuple[str, int], Adapter] = {}
_DOWN: dict[tuple[str, int], Adapter] = {}


class Replacement:
    """Nodes that replaced a node, written in the operator versions of ``opset``."""

    def __init__(self, nodes: list[Node], opset: int):
        self.nodes = nodes
        self.opset = opset


def adapter(
    op_types: str | Iterable[str], version: int, *, up: Adapter | None = None, down: Adapter | None = None
) -> None:
    """Register the rewrites of ``op_types`` across the schema change at opset ``version``."""
    for op_type in [op_types] if isinstance(op_types, str) else op_types:
        for table, fn in ((_UP, up), (_DOWN, down)):
            if fn is None:
                continue
            if (op_type, version) in table:
                raise RuntimeError(f"two version adapters for {op_type} at opset {version}")
            table[(op_type, version)] = fn


def fail(node: Node, why: str) -> NotImplemented:
    """The error for a node that cannot be converted (raise it)."""
    return NotImplemented(f"cannot convert {node.describe()}: {why}")


class Converter:
    """The state of one conversion: names in use, known types, and the edits adapters make."""

    def __init__(self, model: Model, source: int, target: int, types: dict[str, TypeBase]):
        self.model = model
        self.source = source
        self.target = target
        self.types = types  # value name -> inferred type (from the source model)
        self.names: set[str] = set()
        self.counter = itertools.count()
        self.adapted: collections.Counter[str] = collections.Counter()
        self.marked: dict[int, Node] = {}
        self.enlarging: set[int] = set()  # outputs of Resize nodes that were Upsample (scales >= 1)
        self.released: list[Value] = []  # constants an input-to-attribute move may have left unused
        self.graph_inputs: set[int] = set()
        self.function_graphs = {id(f.graph) for f in model.functions}
        for g in all_graphs(model):
            self.graph_inputs.update(id(v) for v in g.inputs)
            self.names.update(g.values())
            self.names.update(n.name for n in g.nodes if n.name)

    # -- names and values -------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        while True:
            name = f"{hint}__v{next(self.counter)}"
            if name not in self.names:
                self.names.add(name)
                return name

    def value(self, hint: str) -> Value:
        return Value(self.fresh(hint))

    def elem_type(self, v: Value | None) -> int | None:
        if v is None:
            return None
        if v.elem_type:
            return v.elem_type
        if isinstance(v.const, Tensor):
            return int(v.const.data_type)
        t = self.types.get(v.name)
        return t.elem_type if isinstance(t, TensorType) else None

    def shape(self, v: Value | None) -> list[Any] | None:
        """Dims (ints, or None where unknown) when the rank is known."""
        if v is None:
            return None
        shape = v.shape
        if shape is None and isinstance(self.types.get(v.name), TensorType):
            shape = self.types[v.name].shape
        if shape is None:
            if v.const is not None:
                return list(v.const.dims)
            return None
        return [d if isinstance(d, int) else None for d in shape.dims]

    def rank(self, v: Value | None) -> int | None:
        s = self.shape(v)
        return None if s is None else len(s)

    def numpy_dtype(self, node: Node, v: Value) -> np.dtype:
        et = self.elem_type(v)
        if et is None:
            raise fail(node, f"the element type of {v.name!r} is unknown (run shape inference first)")
        return DataType(et).numpy_dtype

    # -- constants ----------------------------------------------------------------------------
    def constant(self, v: Value | None) -> np.ndarray | None:
        """The value ``v`` holds on every run: an initializer no feed can override, or a Constant's."""
        if v is None:
            return None
        if v.const is not None and id(v) not in self.graph_inputs:
            return np.asarray(v.const.numpy())
        p = v.producer
        if p is not None and p.op_type == "Constant" and p.domain in DEFAULT_DOMAINS:
            for name, a in p.attributes.items():
                if a.value is None:
                    return None
                if name == "value":
                    return np.asarray(a.value.numpy())
                if name in ("value_float", "value_floats"):
                    return np.asarray(a.value, np.float32)
                if name in ("value_int", "value_ints"):
                    return np.asarray(a.value, np.int64)
        return None

    def require_constant(self, node: Node, index: int, what: str) -> np.ndarray | None:
        """Input ``index`` as an array for an attribute (None when the input is absent); refuses an
        input computed at run time, naming the node."""
        v = node.inputs[index] if index < len(node.inputs) else None
        if v is None:
            return None
        arr = self.constant(v)
        if arr is None:
            raise fail(
                node,
                f"input {index} ({what}, {v.name!r}) becomes an attribute in opset {self.target} "
                "and must be a constant (an initializer or a Constant node), but it is computed at run time",
            )
        return arr

    def clear_input(self, node: Node, index: int) -> None:
        """Drop input ``index`` (it becomes absent; trailing absent inputs are trimmed by ``fit``) and
        remember the constant it may leave unused."""
        if index < len(node.inputs):
            v = node.inputs[index]
            node.set_input(index, None)
            if v is not None:
                self.released.append(v)

    def const(self, node: Node, array: Any, hint: str) -> Value:
        """A new initializer holding ``array`` in the graph of ``node`` (a Constant node placed before
        ``node`` in a function body, which cannot hold initializers)."""
        arr = np.asarray(array)
        name = self.fresh(f"{node.name or node.op_type}_{hint}")
        t = Tensor.from_numpy(arr, name)
        v = Value(name, TensorType(t.data_type, Shape(t.dims)))
        if id(node.graph) in self.function_graphs:
            t.name = None
            self.insert_before(
                node,
                [
                    Node(
                        "Constant",
                        [],
                        [v],
                        {"value": Attr("value", AttrType.TENSOR, t)},
                        name=self.fresh(f"{name}_Constant"),
                    )
                ],
            )
            return v
        v.const = t
        node.graph.add_initializer(v)
        return v

    def set_input(self, node: Node, index: int, v: Value | None) -> None:
        while len(node.inputs) <= index:
            node.append_input(None)
        node.set_input(index, v)

    # -- node edits -------------------------------------------------------------------------
    def node(
        self,
        op_type: str,
        inputs: list[Value | None],
        outputs: list[Value] | int = 1,
        like: Node | None = None,
        **attrs: Any,
    ) -> Node:
        """A new node (not yet in a graph); ``outputs`` an int makes fresh values."""
        from onyx.ir.builder import make_attr

        base = (like.name if like is not None and like.name else op_type) or op_type
        outs = (
            [self.value(f"{base}_{op_type}") for _ in range(outputs)] if isinstance(outputs, int) else outputs
        )
        return Node(
            op_type,
            inputs,
            outs,
            {k: make_attr(k, v) for k, v in attrs.items() if v is not None},
            name=self.fresh(f"{base}_{op_type}"),
        )

    def replace(self, node: Node, nodes: list[Node], opset: int) -> Replacement:
        """Put ``nodes`` where ``node`` was (they must produce its output values themselves)."""
        g = node.graph
        at = g.nodes.index(node)
        g.remove_node(node)
        for i, n in enumerate(nodes):
            g.insert_node(at + i, n)
        self.mark(node)
        return Replacement(nodes, opset)

    def mark(self, node: Node) -> None:
        """Count ``node`` as adapted (once, however many versions it crossed)."""
        if id(node) not in self.marked:
            self.marked[id(node)] = node  # held, so that the id is not reused by another node
            self.adapted[node.op_type] += 1

    def insert_before(self, anchor: Node, nodes: list[Node]) -> None:
        g = anchor.graph
        at = g.nodes.index(anchor)
        for i, n in enumerate(nodes):
            g.insert_node(at + i, n)

    def set_attr(self, node: Node, name: str, value: Any) -> None:
        from onyx.ir.builder import make_attr

        if value is None:
            node.attributes.pop(name, None)
        else:
            node.attributes[name] = make_attr(name, value)

    # -- the walk ---------------------------------------------------------------------------
    def convert_graph(self, graph: Graph, source: int, target: int) -> None:
        for node in list(graph.nodes):
            self.convert_node(node, source, target)

    def convert_node(self, node: Node, source: int, target: int) -> None:
        for sub in node.subgraphs():
            self.convert_graph(sub, source, target)
        if node.domain not in DEFAULT_DOMAINS or source == target:
            return
        schemas = _spec.versions(node.op_type)
        if not schemas:
            raise fail(node, "it is not an operator of the default ONNX domain")
        if _spec.schema_at(node.op_type, source) is None:
            raise fail(node, f"{node.op_type} does not exist in the model's opset {source}")
        if source < target:
            steps = [s.since for s in schemas if source < s.since <= target]
        else:
            steps = [s.since for s in reversed(schemas) if target < s.since <= source]
        for b in steps:
            going_up = source < target
            fn = (_UP if going_up else _DOWN).get((node.op_type, b))
            before = _attr_snapshot(node)
            result = fn(node, self) if fn is not None else None
            if isinstance(result, Replacement):
                for n in result.nodes:
                    self.convert_node(n, result.opset, target)
                return
            new = _spec.schema_at(node.op_type, b if going_up else b - 1)
            old = _spec.schema_at(node.op_type, b - 1 if going_up else b)
            if new is None or new.deprecated:
                why = "is deprecated" if new is not None else "does not exist"
                raise fail(
                    node,
                    f"{node.op_type} {why} in opset {b if going_up else b - 1} "
                    "and the converter has no replacement for it",
                )
            self.fit(node, new, old, b)
            if _attr_snapshot(node) != before:
                self.mark(node)

    def fit(self, node: Node, new: _spec.Schema, old: _spec.Schema | None, b: int) -> None:
        """Make ``node`` fit the schema ``new``: drop attributes it lacks that hold ``old``'s default."""
        for name in list(node.attributes):
            if name in new.attributes:
                continue
            a = node.attributes[name]
            default = old.attributes.get(name) if old is not None else None
            if a.ref_attr_name is None and (
                (default is not None and _same(a.value, default)) or _neutral(name, a.value)
            ):
                del node.attributes[name]
                continue
            raise fail(
                node,
                f"attribute {name!r} = {_show(a.value)} does not exist in {node.op_type}-{new.since} "
                f"(the version on the other side of opset {b}) and has no equivalent there",
            )
        while node.inputs and node.inputs[-1] is None:
            node.inputs.pop()
        if not new.variadic and len(node.inputs) > len(new.inputs):
            extra = node.inputs[len(new.inputs)]
            raise fail(
                node,
                f"input {len(new.inputs)} ({extra.name!r}) does not exist in {node.op_type}-{new.since}",
            )
        while len(node.outputs) > new.max_outputs and not is_used(node.outputs[-1], node.graph):
            node.outputs.pop()
        if len(node.outputs) > new.max_outputs:
            raise fail(
                node,
                f"output {new.max_outputs} ({node.outputs[new.max_outputs].name!r}) is used but does "
                f"not exist in {node.op_type}-{new.since}",
            )

    # -- types -------------------------------------------------------------------------------
    def check_types(self, graph: Graph, opset: int) -> None:
        for node in graph.walk():
            if node.domain not in DEFAULT_DOMAINS:
                continue
            schema = _spec.schema_at(node.op_type, opset)
            if schema is None:
                continue
            for kind, values, allowed_at in (
                ("input", node.inputs, schema.input_types_at),
                ("output", node.outputs, schema.output_types_at),
            ):
                for i, v in enumerate(values):
                    allowed = allowed_at(i)
                    if allowed is None or v is None:
                        continue
                    problem = self._type_problem(v, allowed)
                    if problem is not None:
                        raise fail(
                            node,
                            f"{kind} {i} ({v.name!r}) {problem}, which {node.op_type}-{schema.since} "
                            f"(opset {opset}) does not accept (it takes {_allowed_names(allowed)})",
                        )
            if node.op_type == "Cast" and schema.output_types:
                to = node.attr("to")
                if to is not None and to not in (schema.output_types[0] or (to,)):
                    raise fail(node, f"Cast-{schema.since} (opset {opset}) cannot cast to {_type_name(to)}")

    def _type_problem(self, v: Value, allowed: tuple[int, ...]) -> str | None:
        """Why ``v`` does not fit ``allowed`` (element types, negative codes for other kinds), or None."""
        t = v.type if v.type is not None else self.types.get(v.name)
        kind = _KIND_OF.get(type(t).__name__)
        if kind is not None:
            return None if kind in allowed else f"is a {type(t).__name__.removesuffix('Type').lower()}"
        et = self.elem_type(v)
        if et is None:
            return None
        if et not in allowed:
            return f"has element type {_type_name(et)}"
        return None

    def sweep(self) -> None:
        """Remove the constants that moving inputs into attributes left unused."""
        graphs = all_graphs(self.model)
        outputs = {id(o) for g in graphs for o in g.outputs}
        for v in self.released:
            if v.uses or id(v) in outputs:
                continue
            p = v.producer
            if p is not None and p.op_type == "Constant" and p.graph is not None:
                if all(not o.uses and id(o) not in outputs for o in p.outputs):
                    p.graph.remove_node(p)
            elif v.const is not None and id(v) not in self.graph_inputs:
                for g in graphs:
                    if g.initializers.get(v.name) is v:
                        del g.initializers[v.name]


class Emitter:
    """Collects the nodes of a decomposition."""

    def __init__(self, cx: Converter, like: Node):
        self.cx, self.like, self.nodes = cx, like, []

    def __call__(self, op_type: str, *inputs: Value | None, out: Value | None = None, **attrs) -> Value:
        n = self.cx.node(op_type, list(inputs), [out] if out is not None else 1, like=self.like, **attrs)
        self.nodes.append(n)
        return n.outputs[0]

    def const(self, array) -> Value:
        return self.cx.const(self.like, array, "c")


def named_output(node: Node, i: int) -> Value | None:
    """Output ``i`` when the node declares it with a name."""
    return node.outputs[i] if i < len(node.outputs) and node.outputs[i].name else None


def all_graphs(model: Model) -> list[Graph]:
    out = []
    stack = [model.graph] + [f.graph for f in model.functions]
    while stack:
        g = stack.pop()
        out.append(g)
        for n in g.nodes:
            stack.extend(n.subgraphs())
    return out


def is_used(v: Value, graph: Graph | None) -> bool:
    if v.uses:
        return True
    g = graph
    while g is not None:
        if any(o is v for o in g.outputs):
            return True
        g = g.parent.graph if g.parent is not None else None
    return False


def _attr_snapshot(node: Node) -> tuple:
    """What an adaptation may change: attributes, inputs (trailing absent ones aside), outputs."""
    inputs = list(node.inputs)
    while inputs and inputs[-1] is None:
        inputs.pop()
    return (
        tuple(sorted((k, repr(a.value)) for k, a in node.attributes.items())),
        tuple(id(v) for v in inputs),
        len(node.outputs),
    )


def _same(value: Any, default: Any) -> bool:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, float) or isinstance(default, float):
        try:
            return abs(float(value) - float(default)) <= 1e-7 * max(1.0, abs(float(default)))
        except (TypeError, ValueError):
            return False
    if isinstance(value, list):
        return (
            isinstance(default, list)
            and len(value) == len(default)
            and all(_same(a, b) for a, b in zip(value, default, strict=True))
        )
    return value == default


# list attributes whose spec default depends on the rank (so the table has none), by their neutral value
_NEUTRAL = {"dilations": 1, "strides": 1, "pads": 0}


def _neutral(name: str, value: Any) -> bool:
    return name in _NEUTRAL and isinstance(value, list) and all(v == _NEUTRAL[name] for v in value)


def _show(value: Any) -> str:
    if isinstance(value, bytes):
        return repr(value.decode("utf-8", "replace"))
    if isinstance(value, Graph):
        return "<graph>"
    return repr(value)


_KIND_OF = {"SequenceType": -1, "OptionalType": -2, "MapType": -3, "SparseTensorType": -4}
_KIND_NAMES = {-1: "sequences", -2: "optionals", -3: "maps", -4: "sparse tensors"}


def _allowed_names(allowed: tuple[int, ...]) -> str:
    return ", ".join(_KIND_NAMES[t] if t < 0 else _type_name(t) for t in allowed)


def _type_name(et: int) -> str:
    try:
        return DataType(et).onnx_name
    except ValueError:
        return f"type {et}"


def ints_attr(name: str, values: Any) -> Attr:
    return Attr(name, AttrType.INTS, [int(x) for x in np.asarray(values).reshape(-1)])


def check_target(target: Any) -> int:
    if isinstance(target, bool) or not isinstance(target, int | np.integer):
        raise InvalidArgument(f"target opset must be an int, got {type(target).__name__}")
    hi = _spec.max_opset()
    if not 7 <= int(target) <= hi:
        raise InvalidArgument(
            f"target opset {target} is out of range: the converter handles opsets 7 to {hi}"
        )
    return int(target)
