"""Structural validation of a model against the ONNX IR rules.

:func:`check` raises :class:`~onyx.errors.InvalidGraph` listing every problem found, each naming the
node (op type and name) or the field at fault. ``full=False`` (what sessions use) skips the rules that
only matter for files handed to other tools (IR version against opset, metadata).
"""

from __future__ import annotations

import math

from onyx.errors import InvalidGraph
from onyx.ir.dtypes import DataType
from onyx.ir.model import AttrType, Function, Graph, Model, Node, Value
from onyx.ir.tensor import SparseTensor, Tensor
from onyx.ir.types import MapType, OptionalType, SequenceType, TensorType, TypeBase, UnknownType

MAX_IR_VERSION = 14
MAX_OPSET = {
    "": 28,
    "ai.onnx.ml": 5,
    "ai.onnx.training": 1,
    "ai.onnx.preview.training": 1,
    "ai.onnx.preview": 1,
}
# The lowest IR version each default-domain opset was released with (from the ONNX release table).
_MIN_IR_FOR_OPSET = [
    (28, 14),
    (25, 13),
    (24, 12),
    (23, 11),
    (21, 10),
    (19, 9),
    (15, 8),
    (12, 7),
    (11, 6),
    (10, 5),
    (9, 4),
    (1, 3),
]


def min_ir_version(opset: int) -> int:
    """The IR version of the ONNX release that introduced ``opset``."""
    for op, ir in _MIN_IR_FOR_OPSET:
        if opset >= op:
            return ir
    return 3


def oldest_ir_accepted(opset: int) -> int:
    """The oldest IR version accepted with ``opset``: one release of slack below :func:`min_ir_version`.

    Exporters of the time often paired a new opset with the previous IR version (the official ONNX
    test models declare opset 9 with IR 3), and every runtime loads those files.
    """
    return max(3, min_ir_version(opset) - 1)


class _Checker:
    def __init__(self, model: Model, full: bool):
        self.model = model
        self.full = full
        self.errors: list[str] = []

    def err(self, msg: str) -> None:
        self.errors.append(msg)

    # -- model ---------------------------------------------------------------------------------
    def check_model(self) -> None:
        m = self.model
        if m.ir_version is None:
            self.err("model: ir_version is not set")
        elif m.ir_version < 1 or (self.full and m.ir_version > MAX_IR_VERSION):
            self.err(f"model: ir_version {m.ir_version} is not supported (1..{MAX_IR_VERSION})")
        opsets = m.opsets
        if (m.ir_version or 0) >= 3 and not m.opset_imports:
            self.err("model: opset_import is empty (required from IR version 3)")
        seen: dict[str, int | None] = {}
        for d, v in m.opset_imports:
            dom = "" if d in (None, "ai.onnx") else d
            # the same domain listed again with the same version is harmless (skl2onnx writes that;
            # onnx's checker and onnxruntime accept it); two versions of one domain are not
            if dom in seen and seen[dom] != v:
                self.err(f"model: opset_import lists domain {d or 'ai.onnx'!r} twice, as {seen[dom]} and {v}")
            seen[dom] = v
            if v is None or v < 1:
                self.err(f"model: opset_import for domain {d or 'ai.onnx'!r} has invalid version {v}")
            elif self.full and dom in MAX_OPSET and v > MAX_OPSET[dom]:
                self.err(
                    f"model: opset {v} of domain {d or 'ai.onnx'!r} is newer than the newest known "
                    f"({MAX_OPSET[dom]})"
                )
        if self.full and m.ir_version is not None and "" in opsets and opsets[""] >= 1:
            need = oldest_ir_accepted(opsets[""])
            if m.ir_version < need:
                self.err(
                    f"model: opset {opsets['']} needs IR version >= {need}, the model declares {m.ir_version}"
                )
        if m.graph is None:
            self.err("model: has no graph")
            return
        fkeys: set[tuple] = set()
        for f in m.functions:
            if f.key in fkeys:
                self.err(f"function {f.domain}::{f.name}: defined twice")
            fkeys.add(f.key)
            self.check_function(f)
        self.check_graph(m.graph, "graph", outer=None, main=True)

    # -- graphs --------------------------------------------------------------------------------
    def check_graph(self, g: Graph, where: str, outer: set[int] | None, main: bool = False) -> None:
        for issue in g.load_issues:
            self.err(f"{where} {g.name or ''!r}: {issue}")
        defined: set[int] = set()
        names: dict[str, str] = {}

        def define(v: Value, what: str) -> None:
            if not v.name:
                return
            if v.name in names and names[v.name] != what:
                self.err(f"{where}: {what} {v.name!r} redefines a name already used by a {names[v.name]}")
            names.setdefault(v.name, what)
            defined.add(id(v))

        for v in g.inputs:
            if not v.name:
                self.err(f"{where}: a graph input has an empty name")
            define(v, "graph input")
            if main:
                self.check_value_type(v, f"{where} input {v.name!r}", required=self.full)
        for v in g.initializers.values():
            self.check_initializer(v, where)
            if v in g.inputs:
                continue
            # strict verdict only: onnxruntime runs such old exports, and so do sessions (full=False)
            if self.full and (self.model.ir_version or 0) < 4 and main:
                self.err(
                    f"{where}: initializer {v.name!r} is not a graph input (required before IR version 4)"
                )
            define(v, "initializer")
        outer_ids = outer or set()
        for node in g.nodes:
            self.check_node(node, where)
            for i, v in enumerate(node.inputs):
                if v is None:
                    continue
                if id(v) in defined or id(v) in outer_ids:
                    continue
                if v.producer is not None and v.producer.graph is g:
                    self.err(
                        f"{where}: {node.describe()} input {i} ({v.name!r}) is produced by a later node "
                        f"({v.producer.describe()}): nodes are not in topological order"
                    )
                else:
                    self.err(f"{where}: {node.describe()} input {i} ({v.name!r}) is not defined")
            inner_outer = set(outer_ids) | defined
            for a in node.attributes.values():
                subs = (
                    [a.value]
                    if a.type == AttrType.GRAPH
                    else (a.value or [])
                    if a.type == AttrType.GRAPHS
                    else []
                )
                for sub in subs:
                    if sub is not None:
                        self.check_graph(
                            sub, f"{where}/{node.op_type}:{node.name or ''}.{a.name}", inner_outer
                        )
            for v in node.outputs:
                if v.name:
                    if id(v) in defined:
                        continue
                    if v.name in names:
                        self.err(f"{where}: {node.describe()} output {v.name!r} is assigned more than once")
                    define(v, "node output")
        for v in g.outputs:
            if id(v) not in defined and id(v) not in outer_ids:
                self.err(f"{where}: graph output {v.name!r} is not defined")
            if main:
                self.check_value_type(v, f"{where} output {v.name!r}", required=self.full)

    def check_value_type(self, v: Value, what: str, required: bool) -> None:
        t = v.type
        if t is None:
            if required:
                self.err(f"{what}: has no type")
            return
        if self.full:  # sessions, like onnxruntime, accept graph outputs declared without an element type
            self.check_type(t, what)

    def check_type(self, t: TypeBase, what: str) -> None:
        if isinstance(t, UnknownType):
            self.err(f"{what}: has no type (the TypeProto sets no tensor, sequence, map or optional type)")
        elif isinstance(t, TensorType):
            if t.elem_type is None or t.elem_type == 0:
                self.err(f"{what}: tensor element type is not set")
            elif t.elem_type not in DataType._value2member_map_:
                self.err(f"{what}: unknown tensor element type {t.elem_type}")
        elif isinstance(t, SequenceType | OptionalType):
            if t.elem is None:
                self.err(f"{what}: {type(t).__name__} has no element type")
            else:
                self.check_type(t.elem, what)
        elif isinstance(t, MapType):
            if t.key_type not in (2, 3, 4, 5, 6, 7, 8, 12, 13):
                self.err(f"{what}: map key type {t.key_type} must be an integer type or string")
            if t.value is None:
                self.err(f"{what}: map has no value type")
            else:
                self.check_type(t.value, what)

    def check_initializer(self, v: Value, where: str) -> None:
        c = v.const
        if isinstance(c, SparseTensor):
            self.check_tensor(c.values, f"{where}: sparse initializer {v.name!r} values")
            self.check_tensor(c.indices, f"{where}: sparse initializer {v.name!r} indices")
            return
        if isinstance(c, Tensor):
            if not v.name:
                self.err(f"{where}: an initializer has an empty name")
            self.check_tensor(c, f"{where}: initializer {v.name!r}")

    def check_tensor(self, t: Tensor, what: str) -> None:
        if t.data_type not in DataType._value2member_map_ or t.data_type == 0:
            self.err(f"{what}: invalid element type {t.data_type}")
            return
        if any(d < 0 for d in t.dims):
            self.err(f"{what}: negative dimension in {list(t.dims)}")
            return
        dt = DataType(t.data_type)
        count = math.prod(t.dims)
        if t.raw is not None and t.typed is not None:
            self.err(f"{what}: has both raw_data and a typed data field")
        if t.external is not None and t.raw is None:
            ext = t.external
            need = (count * dt.bitwidth + 7) // 8
            if ext.length is not None and dt != DataType.STRING and ext.length != need:
                self.err(
                    f"{what}: external length {ext.length} does not match shape {list(t.dims)} ({need} bytes)"
                )
            return
        if t.raw is not None:
            n = memoryview(t.raw).nbytes
            if dt == DataType.STRING:
                if n:
                    self.err(f"{what}: string tensors cannot use raw_data")
                return
            if dt.bitwidth == 6:
                need = -(-count * 6 // 8)
            else:
                need = (count * dt.bitwidth + 7) // 8
            if n != need:
                self.err(f"{what}: raw_data has {n} bytes, shape {list(t.dims)} of {dt.name} needs {need}")
            return
        if t.typed is not None:
            try:
                t.numpy()
            except Exception as e:  # noqa: BLE001 - reported as a check error
                self.err(f"{what}: {e}")
            return
        if t._array is None and count != 0:
            self.err(f"{what}: has no data for shape {list(t.dims)}")

    # -- nodes ---------------------------------------------------------------------------------
    def check_node(self, node: Node, where: str, in_function: bool = False) -> None:
        if not node.op_type:
            self.err(f"{where}: a node ({node.name or 'unnamed'}) has no op_type")
        for key, a in node.attributes.items():
            what = f"{where}: {node.describe()} attribute {a.name!r}"
            if not a.name:
                self.err(f"{where}: {node.describe()} has an attribute with an empty name")
            if "\x00dup" in key:
                continue  # reported by the decoder's load issues
            if a.ref_attr_name:
                if not in_function:
                    self.err(f"{what}: refers to {a.ref_attr_name!r} outside a function")
                continue
            if int(a.type) not in AttrType._value2member_map_ or a.type == AttrType.UNDEFINED:
                self.err(f"{what}: invalid attribute type {a.type}")
                continue
            if a.explicit.get("no_value"):
                self.err(f"{what}: declared {AttrType(a.type).name} but carries no value of that kind")
            if a.type == AttrType.TENSOR and isinstance(a.value, Tensor):
                self.check_tensor(a.value, what)
        if self.full and not in_function:
            dom = "" if node.domain in ("", "ai.onnx") else node.domain
            fkeys = {(f.domain, f.name) for f in self.model.functions}
            if dom not in self.model.opsets and (node.domain, node.op_type) not in fkeys:
                self.err(
                    f"{where}: {node.describe()} uses domain {node.domain!r}, which the model does not import"
                )

    # -- functions -----------------------------------------------------------------------------
    def check_function(self, f: Function) -> None:
        where = f"function {f.domain}::{f.name}"
        if not f.name:
            self.err(f"{where}: has no name")
        seen: set[str] = set()
        for v in f.inputs:
            if v.name in seen:
                self.err(f"{where}: input {v.name!r} is declared twice")
            seen.add(v.name)
        for issue in f.graph.load_issues:
            self.err(f"{where}: {issue}")
        declared = set(f.attributes) | {a.name for a in f.attribute_protos}
        defined = {id(v) for v in f.inputs}
        mops = self.model.opsets
        for d, v in f.opset_imports:
            dom = "" if d in (None, "ai.onnx") else d
            # onnx's checker refuses it; onnxruntime runs the body with its own imports, as sessions do
            if self.full and dom in mops and mops[dom] != v and dom == "":
                self.err(f"{where}: imports opset {v} of the default domain, the model imports {mops[dom]}")
        for node in f.nodes:
            self.check_node(node, where, in_function=True)
            for a in node.attributes.values():
                if a.ref_attr_name and a.ref_attr_name not in declared:
                    self.err(
                        f"{where}: {node.describe()} refers to attribute {a.ref_attr_name!r}, not declared"
                    )
            for i, v in enumerate(node.inputs):
                if v is not None and id(v) not in defined:
                    self.err(f"{where}: {node.describe()} input {i} ({v.name!r}) is not defined before use")
            for v in node.outputs:
                if v.name:
                    defined.add(id(v))
        for v in f.outputs:
            if id(v) not in defined:
                self.err(f"{where}: output {v.name!r} is not produced")


def check(model: Model, full: bool = True) -> None:
    """Validate ``model``; raise InvalidGraph listing every problem found.

    ``full=False`` is the lenient mode sessions use: it keeps what would make running fail and lets
    through what onnxruntime runs although onnx's checker refuses it (IR < 4 initializers that are not
    graph inputs, versions newer than the newest known); ``onyx check`` gives the strict verdict."""
    if not isinstance(model, Model):
        from onyx.errors import InvalidArgument

        raise InvalidArgument(f"check expects an onyx Model, got {type(model).__name__}")
    c = _Checker(model, full)
    c.check_model()
    if c.errors:
        shown = c.errors[:20]
        more = f"\n... and {len(c.errors) - 20} more" if len(c.errors) > 20 else ""
        e = InvalidGraph(f"{len(c.errors)} problem(s) in the model:\n  " + "\n  ".join(shown) + more)
        e.errors = c.errors  # type: ignore[attr-defined]
        raise e
