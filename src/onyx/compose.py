"""Combine and cut models: onnx.compose's API (merge_models, merge_graphs, add_prefix, add_prefix_graph,
expand_out_dim, expand_out_dim_graph, check_overlapping_names) and extract_model, on onyx's IR.

The semantics follow onnx.compose: merging connects outputs of the first graph to inputs of the second
through ``io_map``, refuses colliding names (listing them) and models of different IR versions or opsets
for a shared domain; prefixing renames nodes, values, inputs, outputs, initializers, value_info and
local functions, consistently inside subgraphs. Nothing is modified in place unless ``inplace=True``.
"""

from __future__ import annotations

import os

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.model import Attr, AttrType, Graph, Model, Node, Value
from onyx.ir.tensor import SparseTensor, Tensor
from onyx.ir.types import Shape, TensorType

__all__ = [
    "add_prefix",
    "add_prefix_graph",
    "check_overlapping_names",
    "expand_out_dim",
    "expand_out_dim_graph",
    "extract_model",
    "extract_model_file",
    "merge_graphs",
    "merge_models",
]

IoMap = list[tuple[str, str]]


def _copy_graph(graph: Graph) -> Graph:
    """An independent copy of a graph (tensors' data shared, as Model.clone does)."""
    return Model(graph, {}).clone().graph


def _expect(obj: object, kind: type, what: str) -> None:
    if not isinstance(obj, kind):
        raise InvalidArgument(f"{what} must be an onyx {kind.__name__}, got {type(obj).__name__}")


def _prefixed(prefix: str, name: str | None) -> str | None:
    return prefix + name if name else name


# -- names ------------------------------------------------------------------------------------------
def _edge_names(graph: Graph, exclude: set[str] = frozenset()) -> set[str]:  # type: ignore[assignment]
    names = set()
    for n in graph.nodes:
        for v in [*n.inputs, *n.outputs]:
            if v is not None and v.name and v.name not in exclude:
                names.add(v.name)
    return names


def check_overlapping_names(g1: Graph, g2: Graph, io_map: IoMap | None = None) -> list[tuple[str, list[str]]]:
    """The names both graphs use, by kind ("edge", "value_info", "initializer", "sparse_initializer");
    the inputs of ``g2`` that ``io_map`` connects are left out (they disappear in the merge)."""
    _expect(g1, Graph, "g1")
    _expect(g2, Graph, "g2")
    connected = {b for _, b in io_map or []}
    result = []
    overlap = _edge_names(g1) & _edge_names(g2, connected)
    if overlap:
        result.append(("edge", sorted(overlap)))
    overlap = {v.name for v in g1.value_info} & {v.name for v in g2.value_info}
    if overlap:
        result.append(("value_info", sorted(overlap)))
    for kind, sparse in (("initializer", False), ("sparse_initializer", True)):
        a = {k for k, v in g1.initializers.items() if isinstance(v.const, SparseTensor) == sparse}
        b = {k for k, v in g2.initializers.items() if isinstance(v.const, SparseTensor) == sparse}
        if a & b:
            result.append((kind, sorted(a & b)))
    return result


# -- prefixes ---------------------------------------------------------------------------------------
def add_prefix_graph(
    graph: Graph,
    prefix: str,
    rename_nodes: bool = True,
    rename_edges: bool = True,
    rename_inputs: bool = True,
    rename_outputs: bool = True,
    rename_initializers: bool = True,
    rename_value_infos: bool = True,
    inplace: bool = False,
    name_map: dict[str, str] | None = None,
) -> Graph:
    """``graph`` with ``prefix`` put before the names the flags select (empty names stay empty).

    A name selected anywhere is renamed everywhere it appears, subgraphs included, as onnx.compose does;
    ``name_map`` (when given) receives old -> new for every value renamed."""
    _expect(graph, Graph, "graph")
    if not isinstance(prefix, str):
        raise InvalidArgument(f"prefix must be a str, got {type(prefix).__name__}")
    g = graph if inplace else _copy_graph(graph)
    selected: set[str] = set()
    graphs = _graphs_within(g)
    for sub in graphs:
        if rename_edges:
            selected |= _edge_names(sub)
        if rename_inputs:
            selected.update(v.name for v in sub.inputs)
        if rename_outputs:
            selected.update(v.name for v in sub.outputs)
        if rename_initializers:
            selected.update(sub.initializers)
        if rename_value_infos:
            selected.update(v.name for v in sub.value_info)
    selected.discard("")
    mapping = {name: prefix + name for name in selected}
    for v in _values_within(graphs):
        if v.name in mapping:
            v.name = mapping[v.name]
            _rename_tensor(v)
    for sub in graphs:
        sub.initializers = {v.name: v for v in sub.initializers.values()}
        sub.outer_refs = {mapping.get(n, n) for n in sub.outer_refs}
        if rename_nodes:
            for n in sub.nodes:
                n.name = _prefixed(prefix, n.name)
    if name_map is not None:
        name_map.update(mapping)
    return g


def _rename_tensor(v: Value) -> None:
    c = v.const
    if isinstance(c, SparseTensor):
        c.values.name = v.name
    elif isinstance(c, Tensor):
        c.name = v.name


def _graphs_within(graph: Graph) -> list[Graph]:
    out, stack = [], [graph]
    while stack:
        g = stack.pop()
        out.append(g)
        for n in g.nodes:
            stack.extend(n.subgraphs())
    return out


def _values_within(graphs: list[Graph]) -> list[Value]:
    """Every value the graphs define or read, each once."""
    seen: dict[int, Value] = {}
    for g in graphs:
        for v in [*g.inputs, *g.initializers.values(), *g.outputs, *g.value_info]:
            seen.setdefault(id(v), v)
        for n in g.nodes:
            for v in [*n.inputs, *n.outputs]:
                if v is not None:
                    seen.setdefault(id(v), v)
    return list(seen.values())


def add_prefix(
    model: Model,
    prefix: str,
    rename_nodes: bool = True,
    rename_edges: bool = True,
    rename_inputs: bool = True,
    rename_outputs: bool = True,
    rename_initializers: bool = True,
    rename_value_infos: bool = True,
    rename_functions: bool = True,
    inplace: bool = False,
) -> Model:
    """``model`` with ``prefix`` added to the names of its main graph (see :func:`add_prefix_graph`) and,
    with ``rename_functions``, to its local functions and the nodes that call them."""
    _expect(model, Model, "model")
    m = model if inplace else model.clone()
    add_prefix_graph(m.graph, prefix, rename_nodes, rename_edges, rename_inputs, rename_outputs,
                     rename_initializers, rename_value_infos, inplace=True)  # fmt: skip
    if rename_functions and m.functions:
        renamed = {(f.domain, f.name): prefix + f.name for f in m.functions}
        for f in m.functions:
            f.name = prefix + f.name
        for g in [m.graph, *(f.graph for f in m.functions)]:
            for n in g.walk():
                new = renamed.get((n.domain or "", n.op_type))
                if new is not None:
                    n.op_type = new
    return m


# -- merging ----------------------------------------------------------------------------------------
def merge_graphs(
    g1: Graph,
    g2: Graph,
    io_map: IoMap,
    inputs: list[str] | None = None,
    outputs: list[str] | None = None,
    prefix1: str | None = None,
    prefix2: str | None = None,
    name: str | None = None,
    doc_string: str | None = None,
) -> Graph:
    """One graph computing ``g1`` then ``g2``, each ``(out, in)`` of ``io_map`` feeding ``g1``'s output
    ``out`` to ``g2``'s input ``in``. ``inputs``/``outputs`` keep only those (the graphs are cut to what
    they need); ``prefix1``/``prefix2`` rename each graph first (and ``io_map`` with them)."""
    _expect(g1, Graph, "g1")
    _expect(g2, Graph, "g2")
    io_map = _check_io_map(io_map)
    g1, g2 = _copy_graph(g1), _copy_graph(g2)
    if prefix1:
        add_prefix_graph(g1, prefix1, inplace=True)
    if prefix2:
        add_prefix_graph(g2, prefix2, inplace=True)
    io_map = [(_prefixed(prefix1 or "", a), _prefixed(prefix2 or "", b)) for a, b in io_map]
    outs1, ins2 = {a for a, _ in io_map}, {b for _, b in io_map}
    if inputs or outputs:
        keep_in = set(inputs or [])
        keep_out = set(outputs or [])
        in1 = [v.name for v in g1.inputs if not inputs or v.name in keep_in]
        in2 = [v.name for v in g2.inputs if not inputs or v.name in keep_in or v.name in ins2]
        out1 = [v.name for v in g1.outputs if not outputs or v.name in keep_out or v.name in outs1]
        out2 = [v.name for v in g2.outputs if not outputs or v.name in keep_out]
        if len(in1) < len(g1.inputs) or len(out1) < len(g1.outputs):
            g1 = _extract_graph(g1, in1, out1)
        if len(in2) < len(g2.inputs) or len(out2) < len(g2.outputs):
            g2 = _extract_graph(g2, in2, out2)
    g1_outputs = {v.name: v for v in g1.outputs}
    g2_inputs = {v.name: v for v in g2.inputs}
    for a, b in io_map:
        if a not in g1_outputs:
            raise InvalidArgument(
                f"io_map: output {a!r} is not present in g1 (outputs: {sorted(g1_outputs)})"
            )
        if b not in g2_inputs:
            raise InvalidArgument(f"io_map: input {b!r} is not present in g2 (inputs: {sorted(g2_inputs)})")
    overlapping = check_overlapping_names(g1, g2, io_map)
    if overlapping:
        kind, names = overlapping[0]
        raise InvalidArgument(
            f"cannot merge two graphs with overlapping names: repeated {kind} names {', '.join(names)} "
            "(use onyx.compose.add_prefix, or prefix1/prefix2, to tell them apart)"
        )
    g2_outputs = list(g2.outputs)
    for a, b in io_map:
        src, dst = g1_outputs[a], g2_inputs[b]
        dst.replace_all_uses_with(src)
        g2_outputs = [src if v is dst else v for v in g2_outputs]
    g = Graph(name or "_".join(x for x in (g1.name, g2.name) if x))
    g.doc_string = doc_string or (
        f"Graph combining {g1.name} and {g2.name}\n{g1.name}\n\n{g1.doc_string or ''}\n\n"
        f"{g2.name}\n\n{g2.doc_string or ''}"
    )
    for n in [*g1.nodes, *g2.nodes]:
        g.append_node(n)
    g.inputs = list(g1.inputs) + [v for v in g2.inputs if v.name not in ins2]
    g.outputs = [v for v in g1.outputs if v.name not in outs1] + g2_outputs
    g.initializers = {**g1.initializers, **g2.initializers}
    g.value_info = list(g1.value_info) + list(g2.value_info)
    g.overrides = {**g1.overrides, **g2.overrides}
    return g


def _check_io_map(io_map: object) -> IoMap:
    try:
        pairs = [(a, b) for a, b in io_map]  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise InvalidArgument("io_map must be a list of (g1 output name, g2 input name) pairs") from None
    if not all(isinstance(a, str) and isinstance(b, str) for a, b in pairs):
        raise InvalidArgument("io_map must be a list of (g1 output name, g2 input name) pairs of strings")
    return pairs


def merge_models(
    m1: Model,
    m2: Model,
    io_map: IoMap,
    inputs: list[str] | None = None,
    outputs: list[str] | None = None,
    prefix1: str | None = None,
    prefix2: str | None = None,
    name: str | None = None,
    doc_string: str | None = None,
    producer_name: str | None = "onnx.compose.merge_models",
    producer_version: str | None = "1.0",
    domain: str | None = "",
    model_version: int | None = 1,
) -> Model:
    """One model computing ``m1`` then ``m2`` (see :func:`merge_graphs`). The models must share the IR
    version and import the same opset of every domain both use; local functions and metadata are
    merged, refusing two functions of one name or two values of one metadata key."""
    from onyx.checker import check

    _expect(m1, Model, "m1")
    _expect(m2, Model, "m2")
    if m1.ir_version != m2.ir_version:
        raise InvalidArgument(
            f"IR version mismatch {m1.ir_version} != {m2.ir_version}: both models should have the same "
            "IR version"
        )
    opsets = dict(m1.opsets)
    for d, v in m2.opsets.items():
        if d in opsets and opsets[d] != v:
            raise InvalidArgument(
                f"cannot merge models importing different opsets of domain {d or 'ai.onnx'!r}: "
                f"{opsets[d]} and {v} (convert one with onyx.version_converter.convert_version)"
            )
        opsets[d] = v
    m1 = add_prefix(m1, prefix1) if prefix1 else m1
    m2 = add_prefix(m2, prefix2) if prefix2 else m2
    io_map = [(_prefixed(prefix1 or "", a), _prefixed(prefix2 or "", b)) for a, b in _check_io_map(io_map)]
    graph = merge_graphs(m1.graph, m2.graph, io_map, inputs, outputs, name=name, doc_string=doc_string)
    model = Model(graph, opsets, ir_version=m1.ir_version)
    model.producer_name = producer_name
    model.producer_version = producer_version
    model.domain = domain
    model.model_version = model_version
    props = dict(m1.metadata_props)
    for k, v in m2.metadata_props:
        if k in props and props[k] != v:
            raise InvalidArgument(f"cannot merge models with different values of metadata property {k!r}")
        props[k] = v
    model.metadata_props = list(props.items())
    functions = [*m1.clone().functions, *m2.clone().functions]
    keys = [(f.domain, f.name) for f in functions]
    repeated = sorted({f"{d}::{n}" for d, n in keys if keys.count((d, n)) > 1})
    if repeated:
        raise InvalidArgument(
            f"cannot merge models with overlapping local function names: {', '.join(repeated)}"
        )
    model.functions = functions
    check(model)
    return model


# -- output dimensions ------------------------------------------------------------------------------
def expand_out_dim_graph(graph: Graph, dim_idx: int, inplace: bool = False) -> Graph:
    """``graph`` with a dimension of size 1 inserted at ``dim_idx`` in every output (an Unsqueeze per
    output, opset 13 or later), as onnx.compose.expand_out_dim_graph."""
    _expect(graph, Graph, "graph")
    if isinstance(dim_idx, bool) or not isinstance(dim_idx, int | np.integer):
        raise InvalidArgument(f"dim_idx must be an int, got {type(dim_idx).__name__}")
    g = graph if inplace else _copy_graph(graph)
    axes_name = f"{g.name}_expand_out_dim_idx"
    axes = Value(axes_name, TensorType(7, Shape([1])))
    g.append_node(Node("Constant", [], [axes], {"value": Attr("value", AttrType.TENSOR, Tensor.from_numpy(
        np.asarray([dim_idx], np.int64), f"{axes_name}-value"))}, name=f"{axes_name}-constant"))  # fmt: skip
    new_outputs = []
    for out in g.outputs:
        original = out.name
        expanded = Value(original, _expanded_type(out.type, int(dim_idx)))
        if out.producer is not None and out.producer.graph is g and out not in g.inputs:
            out.name = f"{original}_collapsed_dim_{dim_idx}"
        g.append_node(Node("Unsqueeze", [out, axes], [expanded], name=f"unsqueeze-{original}"))
        new_outputs.append(expanded)
    g.outputs = new_outputs
    return g


def _expanded_type(t, dim_idx: int):
    if not isinstance(t, TensorType):
        return t.copy() if t is not None else None
    if t.shape is None:
        return TensorType(t.elem_type)
    dims = list(t.shape.dims)
    dims.insert(dim_idx if dim_idx >= 0 else len(dims) + 1 + dim_idx, 1)
    return TensorType(t.elem_type, Shape(dims))


def expand_out_dim(model: Model, dim_idx: int, inplace: bool = False) -> Model:
    """``model`` with a dimension of size 1 inserted at ``dim_idx`` in every output."""
    _expect(model, Model, "model")
    m = model if inplace else model.clone()
    expand_out_dim_graph(m.graph, dim_idx, inplace=True)
    return m


# -- extraction -------------------------------------------------------------------------------------
def extract_model(model: Model, input_names: list[str], output_names: list[str]) -> Model:
    """The part of ``model`` that computes ``output_names`` from ``input_names`` (values of the main
    graph: inputs, initializers or node outputs), with the initializers and local functions it uses.
    Refuses a name the graph does not define, and outputs that need a graph input not listed."""
    from onyx.shape_inference import infer_shapes

    _expect(model, Model, "model")
    _check_names(input_names, output_names)
    m = model.clone()
    try:
        infer_shapes(m)  # cut points become inputs and outputs: they need their types
    except Exception:  # noqa: BLE001 - what inference cannot type keeps its declared type
        pass
    m.graph = _extract_graph(m.graph, list(input_names), list(output_names))
    used = {(n.domain or "", n.op_type) for n in m.graph.walk()}
    functions = m.function_map()
    keep: dict[tuple[str, str], object] = {}
    while True:
        more = {k for k in used if k not in keep and any(k == (f.domain, f.name) for f in functions.values())}
        if not more:
            break
        for f in m.functions:
            if (f.domain, f.name) in more:
                keep[(f.domain, f.name)] = f
                used |= {(n.domain or "", n.op_type) for n in f.graph.walk()}
    m.functions = [f for f in m.functions if (f.domain, f.name) in keep]
    return m


def extract_model_file(
    input_path: str | os.PathLike,
    output_path: str | os.PathLike,
    input_names: list[str],
    output_names: list[str],
) -> None:
    """onnx.utils.extract_model's form: read ``input_path``, write the extracted part to ``output_path``
    (atomically; never over the input)."""
    from onyx.model_io import load, save

    if os.path.exists(output_path) and os.path.samefile(input_path, output_path):
        raise InvalidArgument(f"output_path {os.fspath(output_path)!r} is the input model")
    save(extract_model(load(input_path), input_names, output_names), output_path)


def _check_names(input_names: object, output_names: object) -> None:
    for what, names in (("input_names", input_names), ("output_names", output_names)):
        if isinstance(names, str | bytes) or not all(isinstance(n, str) for n in names):  # type: ignore[union-attr]
            raise InvalidArgument(f"{what} must be a list of value names")


def _extract_graph(graph: Graph, input_names: list[str], output_names: list[str]) -> Graph:
    _check_names(input_names, output_names)
    values = graph.values()
    for name in [*input_names, *output_names]:
        if name not in values:
            raise InvalidArgument(f"{name!r} is not a value of graph {graph.name!r}")
    cut = set(input_names)
    selected: dict[int, Node] = {}
    initializers: dict[str, Value] = {}
    needed_by: dict[str, str] = {}
    stack = [(values[n], n) for n in output_names]
    seen: set[int] = set()
    while stack:
        v, wanted_for = stack.pop()
        if id(v) in seen or v.name in cut:
            continue
        seen.add(id(v))
        p = v.producer
        if p is None or p.graph is not graph:
            if v.const is not None and graph.initializers.get(v.name) is v:
                initializers[v.name] = v
            elif p is None:
                needed_by.setdefault(v.name, wanted_for)
            continue
        selected[id(p)] = p
        for x in [*p.inputs, *_outer_reads(p)]:
            if x is not None:
                stack.append((x, wanted_for))
    if needed_by:
        name, out = next(iter(needed_by.items()))
        raise InvalidArgument(
            f"output {out!r} cannot be computed from inputs {input_names}: it needs {name!r}, "
            "which is not among them"
        )
    new = Graph(graph.name)
    new.doc_string = graph.doc_string
    replaced: dict[int, Value] = {}
    for name in input_names:
        v = values[name]
        if v.producer is None and v.const is None:
            new.inputs.append(v)
            continue
        fresh = Value(v.name, v.type.copy() if v.type is not None else None)
        replaced[id(v)] = fresh
        new.inputs.append(fresh)
    for n in graph.nodes:
        if id(n) in selected:
            new.append_node(n)
    for n in new.walk():
        for i, x in enumerate(n.inputs):
            if x is not None and id(x) in replaced:
                n.set_input(i, replaced[id(x)])
    new.initializers = {k: v for k, v in graph.initializers.items() if k in initializers and k not in cut}
    new.outputs = [replaced.get(id(values[n]), values[n]) for n in output_names]
    inside = {id(v) for n in new.nodes for v in n.outputs} | {id(v) for v in new.inputs}
    new.value_info = [v for v in graph.value_info if id(v) in inside and v not in new.outputs]
    return new


def _outer_reads(node: Node) -> list[Value]:
    """Values a node's subgraphs read from outside themselves."""
    out = []
    for sub in node.subgraphs():
        graphs = _graphs_within(sub)
        defined = {id(v) for g in graphs for v in [*g.inputs, *g.initializers.values()]}
        defined |= {id(v) for g in graphs for n in g.nodes for v in n.outputs}
        for g in graphs:
            for n in g.nodes:
                out.extend(x for x in n.inputs if x is not None and id(x) not in defined)
    return out
