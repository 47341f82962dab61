"""The in-memory model: Model, Graph, Node, Value, Attr, Function.

A :class:`Value` has one producer (a node output, or none for graph inputs, initializers and
values from an outer scope) and a list of uses ``(node, input index)``. Nodes reference values,
not names, so renaming a value renames it everywhere. The verbs passes need live here:
:meth:`Value.replace_all_uses_with`, :meth:`Graph.insert_node`, :meth:`Graph.remove_node`,
:meth:`Graph.walk` (recursive into subgraphs).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any

from onyx.ir.tensor import SparseTensor, Tensor
from onyx.ir.types import TypeBase


class AttrType(enum.IntEnum):
    """AttributeProto.AttributeType codes."""

    UNDEFINED = 0
    FLOAT = 1
    INT = 2
    STRING = 3
    TENSOR = 4
    GRAPH = 5
    FLOATS = 6
    INTS = 7
    STRINGS = 8
    TENSORS = 9
    GRAPHS = 10
    SPARSE_TENSOR = 11
    SPARSE_TENSORS = 12
    TYPE_PROTO = 13
    TYPE_PROTOS = 14


class Value:
    """A named value in a graph: its type, its producer and its uses."""

    __slots__ = (
        "name",
        "type",
        "producer",
        "index",
        "uses",
        "const",
        "doc_string",
        "metadata_props",
        "unknown",
        "inferred_value",
    )

    def __init__(
        self, name: str = "", type: TypeBase | None = None, const: Tensor | SparseTensor | None = None
    ):
        self.name = name
        self.type = type
        self.producer: Node | None = None
        self.index: int = 0
        self.uses: list[tuple[Node, int]] = []
        self.const = const  # the initializer's data, for initializers
        self.doc_string: str | None = None
        self.metadata_props: list[tuple[str, str]] = []
        self.unknown: list[bytes] = []
        # what shape inference worked out this value to be at load time (shape arithmetic, small
        # constants): an analysis result for the optimizer, kept by rewrites, never saved
        self.inferred_value: Any = None

    @property
    def shape(self):
        return getattr(self.type, "shape", None)

    @property
    def elem_type(self) -> int | None:
        return getattr(self.type, "elem_type", None)

    def is_initializer(self) -> bool:
        return self.const is not None

    def replace_all_uses_with(self, other: Value) -> None:
        """Make every node that reads this value read ``other`` instead."""
        for node, i in list(self.uses):
            node.set_input(i, other)

    def __repr__(self) -> str:
        return f"Value({self.name!r}{', ' + repr(self.type) if self.type is not None else ''})"


class Attr:
    """A node attribute: name, kind and value (or a reference to a function attribute)."""

    __slots__ = ("name", "type", "value", "ref_attr_name", "doc_string", "unknown", "explicit")

    def __init__(self, name: str, type: AttrType | int, value: Any = None, ref_attr_name: str | None = None):
        self.name = name
        self.type = AttrType(type) if type in AttrType._value2member_map_ else type
        self.value = value
        self.ref_attr_name = ref_attr_name
        self.doc_string: str | None = None
        self.unknown: list[bytes] = []
        self.explicit: dict[str, Any] = {}  # other fields present in the file (kept for round trips)

    def __repr__(self) -> str:
        if self.ref_attr_name:
            return f"Attr({self.name}=@{self.ref_attr_name})"
        return f"Attr({self.name}={self.value!r})"


class Node:
    """An operator invocation."""

    __slots__ = (
        "op_type",
        "domain",
        "name",
        "overload",
        "inputs",
        "outputs",
        "attributes",
        "doc_string",
        "metadata_props",
        "graph",
        "unknown",
        "explicit",
    )

    def __init__(
        self,
        op_type: str,
        inputs: list[Value | None] = (),  # type: ignore[assignment]
        outputs: list[Value] = (),  # type: ignore[assignment]
        attributes: dict[str, Attr] | None = None,
        domain: str = "",
        name: str | None = None,
    ):
        self.op_type = op_type
        self.domain = domain
        self.name = name
        self.overload: str | None = None
        self.inputs: list[Value | None] = []
        self.outputs: list[Value] = []
        self.attributes: dict[str, Attr] = attributes or {}
        self.doc_string: str | None = None
        self.metadata_props: list[tuple[str, str]] = []
        self.graph: Graph | None = None
        self.unknown: list[bytes] = []
        self.explicit: frozenset[str] = frozenset()
        for v in inputs:
            self.append_input(v)
        for v in outputs:
            self.append_output(v)

    # -- wiring ------------------------------------------------------------------------------
    def append_input(self, v: Value | None) -> None:
        self.inputs.append(v)
        if v is not None:
            v.uses.append((self, len(self.inputs) - 1))

    def set_input(self, i: int, v: Value | None) -> None:
        old = self.inputs[i]
        if old is not None:
            try:
                old.uses.remove((self, i))
            except ValueError:
                pass
        self.inputs[i] = v
        if v is not None:
            v.uses.append((self, i))

    def append_output(self, v: Value) -> None:
        v.producer = self
        v.index = len(self.outputs)
        self.outputs.append(v)

    def detach(self) -> None:
        """Remove this node's uses from its inputs (before deleting the node)."""
        for i, v in enumerate(self.inputs):
            if v is not None:
                try:
                    v.uses.remove((self, i))
                except ValueError:
                    pass

    # -- attributes --------------------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        a = self.attributes.get(name)
        return default if a is None else a.value

    def subgraphs(self) -> Iterator[Graph]:
        for a in self.attributes.values():
            if a.type == AttrType.GRAPH and a.value is not None:
                yield a.value
            elif a.type == AttrType.GRAPHS:
                yield from a.value or []

    def describe(self) -> str:
        """How errors name this node: 'Conv node "conv1"'."""
        dom = f"{self.domain}::" if self.domain and self.domain != "ai.onnx" else ""
        return f'{dom}{self.op_type} node "{self.name or ""}"'

    def __repr__(self) -> str:
        ins = ", ".join(v.name if v is not None else "" for v in self.inputs)
        outs = ", ".join(v.name for v in self.outputs)
        return f"Node({self.op_type}, [{ins}] -> [{outs}])"


class ValueInfoOverride:
    """A graph's own ValueInfo for a value whose type was already given elsewhere (kept for round trips).

    Graph.overrides maps (list kind, id(value)) to one of these; ``value`` guards against id reuse.
    """

    __slots__ = ("type", "doc_string", "metadata_props", "unknown", "value")

    def __init__(self, type, doc_string, metadata_props, unknown, value=None):
        self.type = type
        self.doc_string = doc_string
        self.metadata_props = metadata_props
        self.unknown = unknown
        self.value = value


class Graph:
    """A graph: inputs, outputs, initializers and nodes in topological order."""

    __slots__ = (
        "name",
        "nodes",
        "inputs",
        "outputs",
        "initializers",
        "value_info",
        "doc_string",
        "quantization_annotation",
        "metadata_props",
        "parent",
        "unknown",
        "explicit",
        "overrides",
        "load_issues",
        "outer_refs",
    )

    def __init__(self, name: str | None = None):
        self.name = name
        self.nodes: list[Node] = []
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.initializers: dict[str, Value] = {}
        self.value_info: list[Value] = []
        self.doc_string: str | None = None
        self.quantization_annotation: list[bytes] = []  # TensorAnnotation messages, kept verbatim
        self.metadata_props: list[tuple[str, str]] = []
        self.parent: Node | None = None
        self.unknown: list[bytes] = []
        self.explicit: frozenset[str] = frozenset()
        self.overrides: dict[tuple[str, int], ValueInfoOverride] = {}  # (kind, id(value)) -> info
        self.load_issues: list[str] = []  # problems seen while decoding (duplicates...), for the checker
        self.outer_refs: set[str] = set()

    # -- editing -----------------------------------------------------------------------------
    def append_node(self, node: Node) -> Node:
        node.graph = self
        self.nodes.append(node)
        return node

    def insert_node(self, index: int, node: Node) -> Node:
        node.graph = self
        self.nodes.insert(index, node)
        return node

    def remove_node(self, node: Node) -> None:
        """Remove a node and its uses; its outputs must be unused by then."""
        node.detach()
        self.nodes.remove(node)
        node.graph = None

    def override_for(self, kind: str, v: Value) -> ValueInfoOverride | None:
        """This graph's own ValueInfo for ``v`` in its ``kind`` list ('input', 'output', 'value_info')."""
        ov = self.overrides.get((kind, id(v)))
        return ov if ov is not None and ov.value is v else None

    def add_initializer(self, value: Value) -> Value:
        self.initializers[value.name] = value
        return value

    # -- reading -----------------------------------------------------------------------------
    def walk(self) -> Iterator[Node]:
        """Every node of this graph and, recursively, of its subgraphs."""
        for node in self.nodes:
            yield node
            for g in node.subgraphs():
                yield from g.walk()

    def values(self) -> dict[str, Value]:
        """Values defined in this graph by name: inputs, initializers, node outputs."""
        out: dict[str, Value] = {}
        for v in self.inputs:
            out[v.name] = v
        out.update(self.initializers)
        for n in self.nodes:
            for v in n.outputs:
                if v.name:
                    out[v.name] = v
        return out

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, {len(self.nodes)} nodes)"


class Function:
    """A model-local function (FunctionProto)."""

    __slots__ = (
        "domain",
        "name",
        "overload",
        "inputs",
        "outputs",
        "attributes",
        "attribute_protos",
        "opset_imports",
        "doc_string",
        "metadata_props",
        "unknown",
        "explicit",
        "graph",
    )

    def __init__(self, domain: str, name: str):
        self.domain = domain
        self.name = name
        self.overload: str | None = None
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.attributes: list[str] = []  # attribute names without defaults
        self.attribute_protos: list[Attr] = []  # attributes with default values
        self.opset_imports: list[tuple[str, int]] = []
        self.doc_string: str | None = None
        self.metadata_props: list[tuple[str, str]] = []
        self.unknown: list[bytes] = []
        self.explicit: frozenset[str] = frozenset()
        self.graph = Graph(name)  # the body: nodes and value_info live here

    @property
    def nodes(self) -> list[Node]:
        return self.graph.nodes

    @property
    def value_info(self) -> list[Value]:
        return self.graph.value_info

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.domain, self.name, self.overload or "")

    def opsets(self) -> dict[str, int]:
        return {("" if d in (None, "ai.onnx") else d): v or 0 for d, v in self.opset_imports}

    def __repr__(self) -> str:
        return f"Function({self.domain}::{self.name}, {len(self.nodes)} nodes)"


class TrainingInfo:
    """TrainingInfoProto: initialization and algorithm graphs with their bindings."""

    __slots__ = ("initialization", "algorithm", "initialization_binding", "update_binding", "unknown")

    def __init__(self) -> None:
        self.initialization: Graph | None = None
        self.algorithm: Graph | None = None
        self.initialization_binding: list[tuple[str, str]] = []
        self.update_binding: list[tuple[str, str]] = []
        self.unknown: list[bytes] = []


class Model:
    """A model: metadata, opset imports, the main graph and model-local functions."""

    __slots__ = (
        "ir_version",
        "opset_imports",
        "producer_name",
        "producer_version",
        "domain",
        "model_version",
        "doc_string",
        "graph",
        "metadata_props",
        "training_info",
        "functions",
        "configuration",
        "unknown",
        "explicit",
        "base_dir",
        "_buffers",
    )

    def __init__(
        self, graph: Graph | None = None, opset_imports: dict[str, int] | None = None, ir_version: int = 10
    ):
        self.ir_version: int | None = ir_version
        self.opset_imports: list[tuple[str, int]] = list((opset_imports or {"": 21}).items())
        self.producer_name: str | None = None
        self.producer_version: str | None = None
        self.domain: str | None = None
        self.model_version: int | None = None
        self.doc_string: str | None = None
        self.graph = graph if graph is not None else Graph("main")
        self.metadata_props: list[tuple[str, str]] = []
        self.training_info: list[TrainingInfo] = []
        self.functions: list[Function] = []
        self.configuration: list[bytes] = []  # DeviceConfigurationProto messages, kept verbatim
        self.unknown: list[bytes] = []
        self.explicit: frozenset[str] = frozenset()
        self.base_dir: str | None = None
        self._buffers: list[Any] = []

    @property
    def opsets(self) -> dict[str, int]:
        """Opset imports as a dict; the default domain is ''."""
        out: dict[str, int] = {}
        for d, v in self.opset_imports:
            out["" if d in (None, "", "ai.onnx") else d] = v or 0
        return out

    def function_map(self) -> dict[tuple[str, str, str], Function]:
        return {f.key: f for f in self.functions}

    def clone(self) -> Model:
        """An independent copy of the model's structure (graphs, nodes, values, attributes, types,
        functions, metadata) that shares the tensors' data: weights are never copied, and a writeable
        array is shared as a read-only view. Rewriting the copy (an optimizer, a session) leaves this
        model exactly as it was."""
        return _Cloner().model(self)

    def __repr__(self) -> str:
        return f"Model(ir_version={self.ir_version}, opsets={self.opsets}, graph={self.graph!r})"


def _copy_fields(obj: Any, new: Any, names: tuple[str, ...]) -> None:
    """Copy plain fields; lists (metadata, unknown fields kept for round trips) are copied shallowly."""
    for name in names:
        v = getattr(obj, name)
        setattr(new, name, list(v) if isinstance(v, list) else v)


_GRAPH_FIELDS = (
    "doc_string", "quantization_annotation", "metadata_props", "unknown", "explicit", "load_issues",
)  # fmt: skip
_FUNCTION_FIELDS = (
    "overload", "attributes", "opset_imports", "doc_string", "metadata_props", "unknown", "explicit",
)  # fmt: skip


class _Cloner:
    """Model.clone: one walk that maps every value, node and graph to its copy."""

    def __init__(self) -> None:
        self.values: dict[int, tuple[Value, Value]] = {}  # id(original) -> (original, copy)
        self.nodes: dict[int, Node] = {}

    def model(self, m: Model) -> Model:
        new = object.__new__(Model)
        plain = tuple(n for n in Model.__slots__ if n not in ("graph", "training_info", "functions"))
        _copy_fields(m, new, plain)
        new.graph = self.graph(m.graph, None)
        new.functions = [self.function(f) for f in m.functions]
        new.training_info = [self.training_info(t) for t in m.training_info]
        for old, v in self.values.values():  # uses in the original's order, nodes of the model only
            v.uses = [(self.nodes[id(n)], i) for n, i in old.uses if id(n) in self.nodes]
        return new

    def value(self, v: Value) -> Value:
        hit = self.values.get(id(v))
        if hit is not None:
            return hit[1]
        new = Value(v.name, v.type.copy() if v.type is not None else None, _share(v.const))
        new.index = v.index
        new.doc_string = v.doc_string
        new.metadata_props = list(v.metadata_props)
        new.unknown = list(v.unknown)
        new.inferred_value = v.inferred_value
        self.values[id(v)] = (v, new)
        return new

    def graph(self, g: Graph, parent: Node | None) -> Graph:
        new = Graph(g.name)
        _copy_fields(g, new, _GRAPH_FIELDS)
        new.outer_refs = set(g.outer_refs)
        new.parent = parent
        new.inputs = [self.value(v) for v in g.inputs]
        new.initializers = {k: self.value(v) for k, v in g.initializers.items()}
        new.nodes = [self.node(n, new) for n in g.nodes]
        new.outputs = [self.value(v) for v in g.outputs]
        new.value_info = [self.value(v) for v in g.value_info]
        for (kind, _), ov in g.overrides.items():
            if ov.value is not None:
                v = self.value(ov.value)
                t = ov.type.copy() if ov.type is not None else None
                new.overrides[(kind, id(v))] = ValueInfoOverride(
                    t, ov.doc_string, list(ov.metadata_props), list(ov.unknown), v
                )
        return new

    def node(self, n: Node, graph: Graph) -> Node:
        new = Node(n.op_type, domain=n.domain, name=n.name)
        self.nodes[id(n)] = new
        _copy_fields(n, new, ("overload", "doc_string", "metadata_props", "unknown", "explicit"))
        new.graph = graph
        new.inputs = [self.value(v) if v is not None else None for v in n.inputs]
        for v in n.outputs:
            c = self.value(v)
            c.producer = new
            new.outputs.append(c)
        new.attributes = {k: self.attr(a, new) for k, a in n.attributes.items()}
        return new

    def attr(self, a: Attr, node: Node | None) -> Attr:
        new = Attr(a.name, a.type, None, a.ref_attr_name)
        new.doc_string = a.doc_string
        new.unknown = list(a.unknown)
        new.explicit = dict(a.explicit)
        v = a.value
        t = a.type
        if v is None:
            pass
        elif t == AttrType.GRAPH:
            v = self.graph(v, node)
        elif t == AttrType.GRAPHS:
            v = [self.graph(g, node) for g in v]
        elif t in (AttrType.TENSOR, AttrType.SPARSE_TENSOR):
            v = _share(v)
        elif t in (AttrType.TENSORS, AttrType.SPARSE_TENSORS):
            v = [_share(x) for x in v]
        elif t == AttrType.TYPE_PROTO:
            v = v.copy()
        elif t == AttrType.TYPE_PROTOS:
            v = [x.copy() for x in v]
        elif isinstance(v, list):
            v = list(v)
        new.value = v
        return new

    def function(self, f: Function) -> Function:
        new = Function(f.domain, f.name)
        _copy_fields(f, new, _FUNCTION_FIELDS)
        new.inputs = [self.value(v) for v in f.inputs]
        new.graph = self.graph(f.graph, None)
        new.outputs = [self.value(v) for v in f.outputs]
        new.attribute_protos = [self.attr(a, None) for a in f.attribute_protos]
        return new

    def training_info(self, t: TrainingInfo) -> TrainingInfo:
        new = TrainingInfo()
        new.initialization = self.graph(t.initialization, None) if t.initialization is not None else None
        new.algorithm = self.graph(t.algorithm, None) if t.algorithm is not None else None
        new.initialization_binding = list(t.initialization_binding)
        new.update_binding = list(t.update_binding)
        new.unknown = list(t.unknown)
        return new


def _share(t: Any) -> Any:
    """A new tensor object over the same data (sparse tensors: over the same value/index tensors)."""
    if isinstance(t, SparseTensor):
        new = SparseTensor(_share(t.values), _share(t.indices), t.dims)
        new.unknown = list(t.unknown)
        new.explicit = t.explicit
        return new
    if isinstance(t, Tensor):
        return t.shared_copy()
    return t
