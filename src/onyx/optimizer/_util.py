"""Helpers shared by the optimizer passes: graph enumeration, constants, safe rewiring, kernels.

A pass builds one :class:`Scope` per run. The scope knows every graph of the model (the main graph,
subgraphs at any depth, function bodies), which values are graph inputs (never constants: a feed or a
loop-carried value may replace them), which values graph output lists name (a subgraph may output an
outer value without any node "using" it), and how to rewire a value without changing the name of a
graph output.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from onyx.errors import OnyxError
from onyx.ir.dtypes import from_numpy
from onyx.ir.model import Attr, AttrType, Function, Graph, Model, Node, Value
from onyx.ir.tensor import SparseTensor, Tensor
from onyx.ir.types import Shape, TensorType
from onyx.ops import registry
from onyx.ops.binding import bind, is_pure, opset_for

DEFAULT_DOMAINS = ("", "ai.onnx")


def is_op(node: Node, *op_types: str) -> bool:
    """Whether ``node`` is one of ``op_types`` of the default ONNX domain."""
    return node.op_type in op_types and (node.domain or "") in DEFAULT_DOMAINS


def has_subgraphs(node: Node) -> bool:
    return any(a.type in (AttrType.GRAPH, AttrType.GRAPHS) for a in node.attributes.values())


def has_attr_refs(node: Node) -> bool:
    return any(a.ref_attr_name for a in node.attributes.values())


class GraphEntry:
    """One graph of the model with the opsets in force there."""

    __slots__ = ("graph", "opsets", "kind", "function", "dynamic")

    def __init__(
        self,
        graph: Graph,
        opsets: dict[str, int],
        kind: str,
        function: Function | None = None,
        dynamic: bool = False,
    ):
        self.graph = graph
        self.opsets = opsets
        self.kind = kind  # "main", "sub" (a node's GRAPH attribute) or "function" (a function body)
        self.function = function
        # a loop body (or inside one): its values may change shape from one iteration to the next
        self.dynamic = dynamic

    def opset(self, domain: str = "") -> int:
        return opset_for(self.opsets, domain)

    def pure(self, node: Node) -> bool:
        """Whether ``node``'s result is a function of its inputs (random ops and Dropout are not)."""
        return is_pure(node, self.opset(node.domain))


def _walk(
    g: Graph,
    opsets: dict[str, int],
    kind: str,
    fn: Function | None,
    out: list[GraphEntry],
    dynamic: bool = False,
) -> None:
    out.append(GraphEntry(g, opsets, kind, fn, dynamic))
    for n in g.nodes:
        for sub in n.subgraphs():
            _walk(sub, opsets, "sub", fn, out, dynamic or not is_op(n, "If"))


class Scope:
    """What a pass needs to know about a model while it rewrites it."""

    def __init__(self, model: Model):
        self.model = model
        self.entries: list[GraphEntry] = []
        opsets = model.opsets
        _walk(model.graph, opsets, "main", None, self.entries)
        self.functions = model.function_map()
        for f in model.functions:
            _walk(f.graph, {**opsets, **f.opsets()}, "function", f, self.entries)
        self.input_ids: set[int] = set()
        self.dynamic_inputs: set[int] = set()  # inputs of loop bodies: shapes may vary
        # id(value) -> the output lists (graph.outputs / function.outputs) that name it
        self.output_lists: dict[int, list[list[Value]]] = {}
        self.list_owner: dict[int, Graph] = {}  # id(output list) -> the graph it belongs to
        for e in self.entries:
            g = e.graph
            for v in g.inputs:
                self.input_ids.add(id(v))
                if e.dynamic:
                    self.dynamic_inputs.add(id(v))
            outs = g.outputs
            if e.kind == "function" and e.function is not None and e.function.graph is g:
                for v in e.function.inputs:
                    self.input_ids.add(id(v))
                outs = e.function.outputs
            self.list_owner[id(outs)] = g
            for v in outs:
                lists = self.output_lists.setdefault(id(v), [])
                if not any(lst is outs for lst in lists):
                    lists.append(outs)
        self.dynamic_graphs = {id(e.graph) for e in self.entries if e.dynamic}
        self.legacy_inputs = (model.ir_version or 0) < 4
        if self.legacy_inputs:
            # before IR 4 an initializer listed among the inputs is a constant (onnxruntime's reading)
            self.input_ids.difference_update(id(v) for v in model.graph.initializers.values())
        self.pinned_ids = set(self.input_ids) | {id(v) for v in model.graph.inputs}
        if model.training_info:
            # training algorithms update initializers by name: never treat them as constants
            self.input_ids.update(id(v) for v in model.graph.initializers.values())
        self.function_bodies = {id(f.graph) for f in model.functions}
        self._pending: dict[int, tuple[Graph, dict[int, tuple[Node, list[Node]]]]] = {}
        self._names: set[str] | None = None
        self._counter = 0

    # -- enumeration -----------------------------------------------------------------------------
    def graphs(self) -> list[GraphEntry]:
        return list(self.entries)

    def main(self) -> GraphEntry:
        return self.entries[0]

    def is_function_call(self, node: Node) -> bool:
        key = (node.domain or "", node.op_type, node.overload or "")
        if key in self.functions:
            return True
        d = registry.normalize_domain(node.domain)
        return d != (node.domain or "") and (d, node.op_type, node.overload or "") in self.functions

    # -- values ----------------------------------------------------------------------------------
    def is_graph_output(self, v: Value) -> bool:
        return id(v) in self.output_lists

    def is_used(self, v: Value) -> bool:
        """Read by a node (at any depth) or named by a graph output list."""
        return bool(v.uses) or id(v) in self.output_lists

    def single_use(self, v: Value, node: Node) -> bool:
        """``v`` is read by ``node`` only (once) and is no graph output."""
        return len(v.uses) == 1 and v.uses[0][0] is node and id(v) not in self.output_lists

    def is_input(self, v: Value) -> bool:
        """A graph input (never removed, never renamed), IR < 4 constant initializers included."""
        return id(v) in self.pinned_ids

    def dims(self, v: Value | None) -> list[int | str | None] | None:
        """The dims of ``v`` when known for every execution: values defined inside a loop body (which
        may change shape between iterations) count as unknown."""
        if v is None:
            return None
        if v.producer is None and v.const is not None:
            if id(v) in self.input_ids:  # an overridable initializer: the declared input shape holds
                t = v.type
                return list(t.shape.dims) if isinstance(t, TensorType) and t.shape is not None else None
            return list(v.const.dims)
        if v.producer is not None:
            g = v.producer.graph
            if g is not None and id(g) in self.dynamic_graphs:
                return None
        elif id(v) in self.dynamic_inputs:
            return None
        return value_dims(v)

    def rank(self, v: Value | None) -> int | None:
        d = self.dims(v)
        return None if d is None else len(d)

    def const_value(self, v: Value | None) -> np.ndarray | None:
        """The value of ``v`` when it is a constant: an initializer that no feed can override."""
        return constant_value(v, self.input_ids)

    def is_const(self, v: Value | None) -> bool:
        return v is not None and v.producer is None and v.const is not None and id(v) not in self.input_ids

    # -- names -----------------------------------------------------------------------------------
    def fresh_name(self, hint: str) -> str:
        if self._names is None:
            names: set[str] = set()
            for e in self.entries:
                g = e.graph
                names.update(v.name for v in g.inputs)
                names.update(g.initializers)
                names.update(v.name for v in g.outputs)
                for n in g.nodes:
                    names.update(v.name for v in n.outputs)
                    names.update(v.name for v in n.inputs if v is not None)
            for f in self.model.functions:
                names.update(v.name for v in f.inputs)
                names.update(v.name for v in f.outputs)
            self._names = names
        base = hint or "onyx_opt"
        while True:
            self._counter += 1
            name = f"{base}__opt{self._counter}"
            if name not in self._names:
                self._names.add(name)
                return name

    def is_function_body(self, graph: Graph) -> bool:
        """Function bodies (FunctionProto) have no initializers: constants there are Constant nodes."""
        return id(graph) in self.function_bodies

    def new_initializer(self, graph: Graph, array: np.ndarray, hint: str) -> Value:
        """A new constant of ``graph`` holding ``array`` (made read-only), with a fresh name."""
        name = self.fresh_name(hint)
        if self.is_function_body(graph):
            v = Value(name)
            node = constant_node(v, array)
            v.type = TensorType(node.attributes["value"].value.data_type, Shape(np.shape(array)))
            graph.insert_node(0, node)
            return v
        v = make_initializer(graph, name, array)
        self.declare_initializer(graph, v)
        return v

    def declare_initializer(self, graph: Graph, v: Value) -> None:
        """Before IR 4 every initializer of the main graph must also be listed as a graph input."""
        if self.legacy_inputs and graph is self.model.graph:
            graph.inputs.append(v)
            self.pinned_ids.add(id(v))

    # -- rewiring --------------------------------------------------------------------------------
    def replace_value(self, old: Value, new: Value) -> bool:
        """Make every reader of ``old`` read ``new`` instead, graph output lists included.

        A graph output keeps its name: when ``old`` is listed as an output, ``new`` takes ``old``'s
        name (and declared type), which is possible only when ``new`` is a node output of the same
        graph that is not itself an output or input. Returns False (changing nothing) otherwise.
        """
        if not self.can_replace(old, new):
            return False
        lists = self.output_lists.get(id(old))
        old.replace_all_uses_with(new)
        if lists:
            g = new.producer.graph  # type: ignore[union-attr]
            for lst in lists:
                for i, v in enumerate(lst):
                    if v is old:
                        lst[i] = new
            del self.output_lists[id(old)]
            self.output_lists[id(new)] = lists
            old_name = old.name
            old.name = self.fresh_name(old_name)
            g.value_info[:] = [v for v in g.value_info if v is not old and v is not new]
            new.name = old_name
            if old.type is not None:
                new.type = old.type
        return True

    def can_replace(self, old: Value, new: Value) -> bool:
        """Whether :meth:`replace_value` would succeed."""
        if old is new:
            return False
        lists = self.output_lists.get(id(old))
        if lists:
            p = new.producer
            if p is None or p.graph is None or id(new) in self.output_lists or id(new) in self.pinned_ids:
                return False
            if any(self.list_owner.get(id(lst)) is not p.graph for lst in lists):
                return False
        return True

    def bypass(self, node: Node, out: Value, inp: Value) -> bool:
        """Replace ``out`` (an output of ``node``) by ``inp`` and delete ``node`` when it is dead."""
        if not self.replace_value(out, inp):
            return False
        if node.graph is not None and not any(self.is_used(v) for v in node.outputs):
            self.remove(node)
        return True

    # -- deferred node-list edits (one pass over each edited graph's node list, in flush) ---------
    def remove(self, node: Node) -> None:
        """Detach ``node`` (and its subgraphs) now; drop it from its graph's node list at flush."""
        self.replace_node(node, [])

    def replace_node(self, node: Node, new_nodes: list[Node]) -> None:
        """Put ``new_nodes`` where ``node`` is (at flush); ``node`` is detached now and marked removed."""
        g = node.graph
        if g is None:
            return
        detach_deep(node)
        node.graph = None
        for n in new_nodes:
            n.graph = g
        self._pending.setdefault(id(g), (g, {}))[1][id(node)] = (node, new_nodes)

    def nodes(self, entry: GraphEntry) -> Iterator[Node]:
        """The nodes of a graph as they were when the loop started, skipping those removed since."""
        for n in list(entry.graph.nodes):
            if n.graph is entry.graph:
                yield n

    def flush(self) -> None:
        """Apply the pending removals and replacements to the node lists."""
        for g, edits in self._pending.values():
            out: list[Node] = []
            gone: set[int] = set()
            for n in g.nodes:
                e = edits.get(id(n))
                if e is None:
                    out.append(n)
                    continue
                gone.update(id(v) for v in n.outputs)
                out.extend(e[1])
            g.nodes[:] = out
            if g.value_info:
                g.value_info[:] = [
                    v
                    for v in g.value_info
                    if id(v) not in gone or (v.producer is not None and v.producer.graph is not None)
                ]
        self._pending.clear()


_CONSTANT_SCALARS = {
    "value_float": np.float32, "value_int": np.int64, "value_floats": np.float32, "value_ints": np.int64,
}  # fmt: skip


def constant_value(v: Value | None, overridable: set[int]) -> np.ndarray | None:
    """The value of ``v`` when it is a constant: an initializer whose id is not in ``overridable`` (no
    feed can replace it), or the output of a ``Constant`` node with one literal attribute."""
    if v is None or id(v) in overridable:
        return None
    p = v.producer
    if p is None:
        c = v.const
        if isinstance(c, Tensor | SparseTensor):
            try:
                return c.numpy()
            except (OnyxError, ValueError, TypeError):
                return None
        return None
    if not is_op(p, "Constant") or len(p.attributes) != 1:
        return None
    a = next(iter(p.attributes.values()))
    if a.ref_attr_name:
        return None
    if a.name == "value" and a.type == AttrType.TENSOR:
        try:
            return a.value.numpy()
        except (OnyxError, ValueError, TypeError):
            return None
    dtype = _CONSTANT_SCALARS.get(a.name)
    return None if dtype is None else np.asarray(a.value, dtype)


def make_initializer(graph: Graph, name: str, array: Any) -> Value:
    arr = np.asarray(array)
    if arr.flags.writeable and arr.dtype != object:
        arr = arr.view()
        arr.flags.writeable = False
    t = Tensor.from_numpy(arr, name)
    v = Value(name, TensorType(t.data_type, Shape(t.dims)), const=t)
    graph.add_initializer(v)
    return v


def detach_deep(node: Node) -> None:
    """Remove the uses of ``node`` and of every node of its subgraphs (outer values included)."""
    node.detach()
    for g in node.subgraphs():
        for n in g.nodes:
            detach_deep(n)


def prune_value_info(sc: Scope) -> bool:
    """Drop value_info entries of values that no graph defines any more (removed or folded nodes)."""
    changed = False
    defined = set(sc.input_ids)
    for e in sc.entries:
        defined.update(id(v) for v in e.graph.initializers.values())
        for n in e.graph.nodes:
            defined.update(id(v) for v in n.outputs)
    for e in sc.entries:
        g = e.graph
        if not g.value_info:
            continue
        keep = [v for v in g.value_info if id(v) in defined]
        if len(keep) != len(g.value_info):
            g.value_info[:] = keep
            changed = True
    return changed


def _readonly(array: Any) -> np.ndarray:
    arr = np.asarray(array)
    if arr.flags.writeable and arr.dtype != object:
        arr = arr.view()
        arr.flags.writeable = False
    return arr


def value_to_constant(graph: Graph, v: Value, array: np.ndarray, keep_type: bool) -> None:
    """Turn node output ``v`` into an initializer of ``graph`` holding ``array`` (same Value object)."""
    v.producer = None
    v.index = 0
    v.const = Tensor.from_numpy(_readonly(array), v.name)
    if not keep_type or v.type is None:
        v.type = TensorType(v.const.data_type, Shape(v.const.dims))
    graph.add_initializer(v)


def constant_node(v: Value, array: np.ndarray) -> Node:
    """A Constant node producing ``v`` (for graph outputs: a graph output that names an initializer
    is valid ONNX, but not every reader accepts it, and its declared type would be lost)."""
    node = Node(
        "Constant", [], [], {"value": Attr("value", AttrType.TENSOR, Tensor.from_numpy(_readonly(array)))}
    )
    node.name = f"{v.name}__folded"
    node.append_output(v)
    return node


def fold_node(sc: Scope, graph: Graph, node: Node, arrays: dict[int, np.ndarray]) -> list[Node]:
    """Replace ``node`` by constants: ``arrays`` maps output index -> value for every used output.

    Outputs named by a graph output list become Constant nodes (returned, to be put where ``node``
    was); the others become initializers. The caller removes ``node`` from the graph's node list.
    """
    for v in node.outputs:
        v.producer = None
    node.detach()
    new_nodes = []
    for i, arr in arrays.items():
        v = node.outputs[i]
        if sc.is_graph_output(v) or sc.is_function_body(graph):
            new_nodes.append(constant_node(v, arr))
        else:
            value_to_constant(graph, v, arr, keep_type=False)
            sc.declare_initializer(graph, v)
    return new_nodes


def replace_nodes(graph: Graph, replacements: dict[int, list[Node]]) -> None:
    """Put each node id's replacement list where that node was (an empty list removes it)."""
    if not replacements:
        return
    out: list[Node] = []
    for n in graph.nodes:
        rep = replacements.get(id(n))
        if rep is None:
            out.append(n)
            continue
        n.graph = None
        for r in rep:
            r.graph = graph
            out.append(r)
    graph.nodes[:] = out


def run_kernel(node: Node, args: list[Any], opset: int) -> list[Any] | None:
    """Run ``node``'s kernel on ``args`` (its inputs, None where absent); None when the node cannot be
    bound here (no kernel, a bad attribute, a subgraph) or the kernel fails: the run reports those."""
    try:
        bound = bind(node, opset)
    except OnyxError:
        return None
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            res = bound(*args)
    except Exception:  # noqa: BLE001 - folding is best effort: the run reports the error
        return None
    if (len(node.outputs) == 1 and not isinstance(res, tuple)) or not isinstance(res, tuple | list):
        res = (res,)  # one output may be a sequence (a list)
    return list(res)


def value_elem(v: Value | None) -> int | None:
    """The element type of a tensor value when known (declared, inferred or constant)."""
    if v is None:
        return None
    if v.const is not None and v.producer is None:
        try:
            return int(v.const.data_type) or None
        except (AttributeError, TypeError):
            return None
    t = v.type
    if isinstance(t, TensorType) and t.elem_type:
        return int(t.elem_type)
    return None


def value_dims(v: Value | None) -> list[int | str | None] | None:
    """The dims of a tensor value when its rank is known (ints, symbol names or None)."""
    if v is None:
        return None
    if v.const is not None and v.producer is None:
        return list(v.const.dims)
    t = v.type
    if isinstance(t, TensorType) and t.shape is not None:
        return list(t.shape.dims)
    return None


def ints_of(arr: np.ndarray | None) -> list[int] | None:
    if arr is None:
        return None
    a = np.asarray(arr)
    if a.dtype.kind not in "iu":
        return None
    return [int(x) for x in a.reshape(-1).tolist()]


def elem_of_array(arr: np.ndarray) -> int | None:
    try:
        return int(from_numpy(arr.dtype))
    except OnyxError:
        return None


def bypass_where(model: Model, op_type: str, source: Callable[[Scope, Any, Node], Value | None]) -> bool:
    """The loop every elimination pass shares: each ``op_type`` node with one output, in every graph,
    for which ``source(scope, graph entry, node)`` names a value holding the same result, is bypassed
    (its readers read that value; graph outputs keep their names). Returns whether any was."""
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        for node in sc.nodes(entry):
            if not is_op(node, op_type) or len(node.outputs) != 1:
                continue
            x = source(sc, entry, node)
            if x is not None:
                changed |= sc.bypass(node, node.outputs[0], x)
    sc.flush()
    return changed
