"""A concise builder for graphs and models, used by tests and by optimizer passes.

b = GraphBuilder(opset=21)
x = b.input("x", np.float32, ["N", 3])
y = b.Relu(b.Add(x, b.const(np.ones(3, np.float32))))
b.output(y, "y")
model = b.model()
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.model import Attr, AttrType, Graph, Model, Node, Value
from onyx.ir.tensor import SparseTensor, Tensor
from onyx.ir.types import Shape, TensorType, TypeBase, tensor_type


def make_attr(name: str, value: Any) -> Attr:
    """An attribute with its kind inferred from the Python value."""
    if isinstance(value, Attr):
        return value
    if isinstance(value, bool | int | np.integer):
        return Attr(name, AttrType.INT, int(value))
    if isinstance(value, float | np.floating):
        return Attr(name, AttrType.FLOAT, float(value))
    if isinstance(value, str):
        return Attr(name, AttrType.STRING, value.encode("utf-8"))
    if isinstance(value, bytes):
        return Attr(name, AttrType.STRING, value)
    if isinstance(value, Tensor):
        return Attr(name, AttrType.TENSOR, value)
    if isinstance(value, np.ndarray):
        return Attr(name, AttrType.TENSOR, Tensor.from_numpy(value))
    if isinstance(value, SparseTensor):
        return Attr(name, AttrType.SPARSE_TENSOR, value)
    if isinstance(value, Graph):
        return Attr(name, AttrType.GRAPH, value)
    if isinstance(value, TypeBase):
        return Attr(name, AttrType.TYPE_PROTO, value)
    if isinstance(value, list | tuple):
        items = list(value)
        if not items or all(isinstance(v, bool | int | np.integer) for v in items):
            return Attr(name, AttrType.INTS, [int(v) for v in items])
        if all(isinstance(v, int | float | np.integer | np.floating) for v in items):
            return Attr(name, AttrType.FLOATS, [float(v) for v in items])
        if all(isinstance(v, str | bytes) for v in items):
            return Attr(
                name, AttrType.STRINGS, [v.encode("utf-8") if isinstance(v, str) else v for v in items]
            )
        if all(isinstance(v, np.ndarray | Tensor) for v in items):
            return Attr(
                name, AttrType.TENSORS, [v if isinstance(v, Tensor) else Tensor.from_numpy(v) for v in items]
            )
        if all(isinstance(v, Graph) for v in items):
            return Attr(name, AttrType.GRAPHS, items)
        if all(isinstance(v, TypeBase) for v in items):
            return Attr(name, AttrType.TYPE_PROTOS, items)
    raise InvalidArgument(f"attribute {name!r}: cannot infer the ONNX kind of {type(value).__name__}")


class GraphBuilder:
    """Builds one graph; ``b.OpType(*inputs, **attributes)`` adds a node and returns its output(s)."""

    def __init__(
        self,
        name: str = "main",
        opset: int = 21,
        opsets: dict[str, int] | None = None,
        ir_version: int = 10,
        outer: GraphBuilder | None = None,
    ):
        self.graph = Graph(name)
        self.opsets = {"": opset, **(opsets or {})}
        self.ir_version = ir_version
        self.outer = outer
        self._names = outer._names if outer is not None else itertools.count()

    def _fresh(self, hint: str) -> str:
        return f"{hint}_{next(self._names)}"

    def input(self, name: str, dtype: Any = np.float32, shape: Any = None) -> Value:
        """Declare a graph input (dtype: numpy dtype, DataType or name; shape: ints, names, None)."""
        v = Value(name, tensor_type(dtype, shape) if not isinstance(dtype, TypeBase) else dtype)
        self.graph.inputs.append(v)
        return v

    def initializer(self, name: str, array: Any) -> Value:
        """Add a named initializer."""
        t = array if isinstance(array, Tensor) else Tensor.from_numpy(np.asarray(array), name)
        t.name = name
        v = Value(name, TensorType(t.data_type, Shape(t.dims)), const=t)
        self.graph.add_initializer(v)
        return v

    def const(self, array: Any, name: str | None = None) -> Value:
        """An anonymous initializer holding ``array``."""
        return self.initializer(name or self._fresh("const"), np.asarray(array))

    def op(
        self,
        op_type: str,
        *inputs: Value | None,
        domain: str = "",
        outputs: int | list[str] = 1,
        name: str | None = None,
        **attrs: Any,
    ) -> Any:
        """Add a node; returns its output Value, or a tuple when it has several."""
        out_names = (
            [self._fresh(op_type.lower()) for _ in range(outputs)] if isinstance(outputs, int) else outputs
        )
        node = Node(
            op_type,
            list(inputs),
            [Value(n) for n in out_names],
            {k: make_attr(k, v) for k, v in attrs.items() if v is not None},
            domain=domain,
            name=name or self._fresh(f"n_{op_type}"),
        )
        self.graph.append_node(node)
        return node.outputs[0] if len(node.outputs) == 1 else tuple(node.outputs)

    def __getattr__(self, op_type: str):
        if op_type[:1].isupper():
            return lambda *inputs, **attrs: self.op(op_type, *inputs, **attrs)
        raise AttributeError(op_type)

    def output(self, value: Value, name: str | None = None, dtype: Any = None, shape: Any = None) -> Value:
        """Declare a graph output (renaming the value when ``name`` is given)."""
        if name is not None:
            value.name = name
        if dtype is not None:
            value.type = tensor_type(dtype, shape)
        self.graph.outputs.append(value)
        return value

    def subgraph(self, name: str = "body") -> GraphBuilder:
        """A builder for a subgraph (If/Loop/Scan body) that may read this graph's values."""
        return GraphBuilder(name, self.opsets[""], self.opsets, self.ir_version, outer=self)

    def model(self, producer_name: str = "onyx.builder") -> Model:
        m = Model(self.graph, dict(self.opsets), ir_version=self.ir_version)
        m.producer_name = producer_name
        return m
