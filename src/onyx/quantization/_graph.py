"""Small editing helpers on onyx's IR that the quantizers share: load, name, add, sort, run."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument, InvalidGraph
from onyx.ir.builder import make_attr
from onyx.ir.dtypes import DataType
from onyx.ir.model import Graph, Model, Node, Value
from onyx.ir.tensor import Tensor
from onyx.ir.types import Shape, TensorType

FLOAT_TYPES = (int(DataType.FLOAT), int(DataType.FLOAT16))


def load_model(model_input: Any) -> Model:
    """A private, shape-inferred copy of a path or an onyx Model (the caller's model is never edited)."""
    from onyx.model_io import load
    from onyx.shape_inference import infer_shapes

    if isinstance(model_input, Model):
        model = model_input.clone()
    elif isinstance(model_input, str | os.PathLike):
        model = load(model_input)
    else:
        raise InvalidArgument(
            f"the model must be a path or an onyx Model, got {type(model_input).__name__} "
            "(convert an onnx.ModelProto with onyx.load_from_string(proto.SerializeToString()))"
        )
    return infer_shapes(model)


def opset(model: Model) -> int:
    return int(model.opsets.get("", 0))


def is_float(v: Value | None) -> bool:
    if v is None:
        return False
    if v.const is not None:
        return int(v.const.data_type) in FLOAT_TYPES
    return v.elem_type in FLOAT_TYPES


def graph_input_names(graph: Graph) -> list[str]:
    return [v.name for v in graph.inputs if v.name not in graph.initializers]


class Names:
    """Hands out names not yet used in a graph (values and nodes)."""

    def __init__(self, graph: Graph):
        self.used: set[str] = set(graph.initializers)
        for v in graph.inputs:
            self.used.add(v.name)
        for n in graph.nodes:
            if n.name:
                self.used.add(n.name)
            for v in n.outputs:
                self.used.add(v.name)

    def take(self, name: str) -> str:
        base, i = name, 1
        while name in self.used:
            name = f"{base}_{i}"
            i += 1
        self.used.add(name)
        return name


def add_initializer(graph: Graph, name: str, array: np.ndarray) -> Value:
    arr = np.asarray(array)
    t = Tensor.from_numpy(arr, name)
    v = Value(name, TensorType(t.data_type, Shape(t.dims)), const=t)
    graph.add_initializer(v)
    return v


def new_value(name: str, elem_type: int | None, like: Value | None = None) -> Value:
    shape = like.shape.copy() if like is not None and like.shape is not None else None
    return Value(name, TensorType(elem_type, shape))


def make_node(
    op_type: str,
    inputs: list[Value | None],
    outputs: list[Value],
    name: str | None,
    domain: str = "",
    **attrs: Any,
) -> Node:
    return Node(
        op_type,
        inputs,
        outputs,
        {k: make_attr(k, v) for k, v in attrs.items() if v is not None},
        domain=domain,
        name=name,
    )


def toposort(graph: Graph) -> None:
    """Order nodes so every value is produced before use (stable: keeps the given order otherwise)."""
    produced = {id(v) for v in graph.inputs} | {id(v) for v in graph.initializers.values()}
    pending = list(graph.nodes)
    ordered: list[Node] = []
    while pending:
        rest = []
        for n in pending:
            if all(v is None or id(v) in produced or v.producer is None for v in n.inputs):
                ordered.append(n)
                produced.update(id(o) for o in n.outputs)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise InvalidGraph(f"quantized graph has a cycle through {rest[0].describe()}")
        pending = rest
    graph.nodes[:] = ordered


def drop_unused_initializers(graph: Graph) -> None:
    used = {id(v) for n in graph.walk() for v in n.inputs if v is not None}
    used |= {id(v) for v in graph.outputs}
    for name in [n for n, v in graph.initializers.items() if id(v) not in used]:
        del graph.initializers[name]
    graph.inputs[:] = [v for v in graph.inputs if v.name not in graph.initializers or id(v) in used]


def with_outputs(model: Model, names: Iterable[str]) -> Model:
    """A copy of ``model`` whose graph also outputs the named values (existing outputs first)."""
    m = model.clone()
    values = m.graph.values()
    have = {v.name for v in m.graph.outputs}
    for name in names:
        if name not in have and name in values:
            m.graph.outputs.append(values[name])
            have.add(name)
    return m


def session(model: Model):
    """An onyx session that runs the graph as written (no fusions), as onnxruntime's calibrator does."""
    from onyx.runtime.options import GraphOptimizationLevel, SessionOptions
    from onyx.runtime.session import InferenceSession

    opts = SessionOptions()
    opts.graph_optimization_level = GraphOptimizationLevel.ORT_DISABLE_ALL
    return InferenceSession(model, opts)


def check_feeds(feeds: Any, input_names: list[str], where: str) -> dict[str, Any]:
    """A batch from a data reader must be a dict naming exactly the model's (required) inputs."""
    if not isinstance(feeds, dict):
        raise InvalidArgument(
            f"{where} gave a {type(feeds).__name__}, expected a dict of input name -> array"
        )
    unknown = sorted(set(feeds) - set(input_names))
    if unknown:
        raise InvalidArgument(
            f"{where} gave input(s) {', '.join(map(repr, unknown))} that the model does not have; "
            f"its inputs are {', '.join(map(repr, input_names))}"
        )
    missing = [n for n in input_names if n not in feeds]
    if missing:
        raise InvalidArgument(f"{where} gave no value for model input(s) {', '.join(map(repr, missing))}")
    return feeds
