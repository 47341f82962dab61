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

    def __repr__(self) -> str:
        return f"Model(ir_version={self.ir_version}, opsets={self.opsets}, graph={self.graph!r})"
