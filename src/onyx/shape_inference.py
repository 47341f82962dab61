"""Shape and type inference: the driver. Each operator's rule lives beside its kernel.

:func:`infer_shapes` walks every graph in order and gives each value an element type and a shape whose
dims are ints or symbols (``batch``, ``2*seq``, ``batch*seq``). Three sources, in this order:

1. constant folding: a node whose inputs are all known small constants is run with its kernel;
2. symbolic values: shape subgraphs (Shape -> Gather -> Mul -> Concat -> Reshape) are evaluated on
   numpy object arrays of :class:`~onyx.ir.symbolic.Sym`, so shapes computed at run time are known now;
3. the op's rule, registered with ``@shape_rule("Op")`` in the op's own file, which reads a
   :class:`ShapeContext` and sets the outputs.

A value whose dim cannot be known (NonZero's count, say) gets a fresh symbol ``unk__N``.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from onyx.errors import Fail, InvalidGraph, OnyxError
from onyx.ir.dtypes import DataType, from_numpy
from onyx.ir.model import Attr, Function, Graph, Model, Node, Value
from onyx.ir.symbolic import DimLike, Sym, dim_to_proto, parse_dim
from onyx.ir.tensor import SparseTensor, Tensor
from onyx.ir.types import MapType, OptionalType, SequenceType, Shape, TensorType, TypeBase
from onyx.ops import registry
from onyx.ops.binding import attribute_value, bind, is_pure, opset_for

FOLD_LIMIT = 1 << 16  # fold constants only when inputs hold at most this many elements
# ops whose kernels also work on numpy object arrays of symbolic dims (shape arithmetic)
SYMBOLIC_OK = {
    "Gather", "Concat", "Slice", "Unsqueeze", "Squeeze", "Reshape", "Identity", "Add", "Sub", "Mul", "Neg",
    "Expand", "Max", "Min", "Abs", "Flatten", "Transpose", "Tile", "Sum", "Equal", "Where",
}  # fmt: skip


@dataclass
class Info:
    """What inference knows of a value: its type, its dims (tensors) and maybe its value."""

    type: TypeBase | None = None
    elem: int | None = None
    dims: list[DimLike | None] | None = None
    value: np.ndarray | None = None

    @property
    def rank(self) -> int | None:
        return None if self.dims is None else len(self.dims)

    def is_tensor(self) -> bool:
        return self.type is None or isinstance(self.type, TensorType)


def info_from_type(t: TypeBase | None) -> Info:
    if isinstance(t, TensorType):
        dims = None
        if t.shape is not None:
            dims = [parse_dim(d) if isinstance(d, str) else d for d in t.shape.dims]
        return Info(t, t.elem_type or None, dims)
    return Info(t)


def info_from_array(a: Any) -> Info:
    if isinstance(a, np.ndarray | np.generic):
        arr = np.asarray(a)
        if arr.dtype == object and arr.size and not isinstance(arr.reshape(-1)[0], str):
            if not _has_sym(arr):  # symbolic arithmetic that came out all numbers: plain int64
                try:
                    arr = arr.astype(np.int64)
                except (TypeError, ValueError, OverflowError):
                    pass
            return Info(None, int(DataType.INT64), list(arr.shape), arr)
        return Info(None, int(from_numpy(arr.dtype)), list(arr.shape), arr)
    if isinstance(a, list):
        elem = info_from_array(a[0]) if a else Info()
        return Info(SequenceType(type_of(elem)))
    return Info()


def type_of(info: Info) -> TypeBase | None:
    """The IR type an Info stands for (tensor types with proto-ready dims)."""
    if info.type is not None and not isinstance(info.type, TensorType):
        return info.type
    if info.elem is None and info.dims is None:
        return info.type
    shape = None if info.dims is None else Shape([dim_to_proto(d) for d in info.dims])
    return TensorType(info.elem, shape)


class ShapeContext:
    """What a shape rule sees: the node, its inputs' types/shapes/values, and setters for its outputs."""

    def __init__(self, inf: _Inference, node: Node, inputs: list[Info | None], opset: int):
        self.inf = inf
        self.node = node
        self.inputs = inputs
        self.opset = opset
        self.outputs: list[Info | None] = [None] * len(node.outputs)

    # -- inputs --------------------------------------------------------------------------------
    @property
    def num_inputs(self) -> int:
        return len(self.inputs)

    @property
    def num_outputs(self) -> int:
        return len(self.node.outputs)

    def has_input(self, i: int) -> bool:
        return i < len(self.inputs) and self.node.inputs[i] is not None

    def input_info(self, i: int) -> Info | None:
        return self.inputs[i] if self.has_input(i) else None

    def input_elem(self, i: int) -> int | None:
        info = self.input_info(i)
        return None if info is None else info.elem

    def input_shape(self, i: int) -> list[DimLike | None] | None:
        info = self.input_info(i)
        return None if info is None or info.dims is None else list(info.dims)

    def input_rank(self, i: int) -> int | None:
        s = self.input_shape(i)
        return None if s is None else len(s)

    def input_type(self, i: int) -> TypeBase | None:
        info = self.input_info(i)
        return None if info is None else type_of(info)

    def input_value(self, i: int) -> np.ndarray | None:
        """The input's value when known at load time (constant, or symbolic shape arithmetic)."""
        info = self.input_info(i)
        return None if info is None else info.value

    def input_ints(self, i: int) -> list[DimLike] | None:
        """The input's known value as a flat list of ints/symbols (for shape-like inputs)."""
        v = self.input_value(i)
        if v is None:
            return None
        return [x if isinstance(x, Sym) else int(x) for x in np.asarray(v).reshape(-1).tolist()]

    def attr(self, name: str, default: Any = None) -> Any:
        a = self.inf.attrs(self.node).get(name)
        if a is None:
            return default
        try:
            return attribute_value(a)
        except OnyxError:
            return a.value

    # -- outputs -------------------------------------------------------------------------------
    def set_output(self, i: int, elem: int | None, dims: list[DimLike | None] | None) -> None:
        """Set output ``i`` to a tensor of ``elem`` with ``dims`` (None: unknown rank)."""
        if i < len(self.outputs):
            dims = None if dims is None else [Sym.make(d) if isinstance(d, Sym) else d for d in dims]
            self.outputs[i] = Info(None, elem, dims)

    def set_output_type(self, i: int, t: TypeBase | None) -> None:
        if i < len(self.outputs):
            self.outputs[i] = info_from_type(t)

    def set_output_value(self, i: int, value: np.ndarray, elem: int | None = None) -> None:
        if i < len(self.outputs):
            arr = np.asarray(value)
            self.outputs[i] = Info(
                None, elem if elem is not None else int(DataType.INT64), list(arr.shape), arr
            )

    def same_as_input(self, i: int = 0, out: int = 0, elem: int | None = None) -> None:
        info = self.input_info(i)
        if info is not None:
            self.set_output(out, elem if elem is not None else info.elem, info.dims)

    def new_dim(self) -> Sym:
        """A fresh symbol for a dim that depends on data."""
        return self.inf.new_symbol()

    def fail(self, message: str) -> NoReturn:
        """A contradiction: raises in strict mode, otherwise the outputs stay unknown."""
        raise _RuleFailure(f"{self.node.describe()}: {message}")

    def infer_subgraph(self, graph: Graph, inputs: list[Info | None]) -> list[Info]:
        """Infer a subgraph body given its inputs' infos (outer values come from the enclosing graph)."""
        return self.inf.infer_graph(graph, inputs)


class _RuleFailure(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Helpers shared by rules


def broadcast_dims(shapes: list[list[DimLike | None] | None]) -> list[DimLike | None] | None:
    """Numpy-style broadcasting of symbolic shapes; None if a rank is unknown."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)  # type: ignore[arg-type]
    out: list[DimLike | None] = []
    for axis in range(rank):
        dims = []
        for s in shapes:
            k = axis - (rank - len(s))  # type: ignore[arg-type]
            dims.append(s[k] if k >= 0 else 1)  # type: ignore[index]
        known = [d for d in dims if d != 1]
        if not known:
            out.append(1)
            continue
        ints = {d for d in known if isinstance(d, int)}
        if len(ints) > 1:
            raise _RuleFailure(f"cannot broadcast dims {dims} on axis {axis}")
        if ints:
            out.append(ints.pop())
        elif all(d is not None and d == known[0] for d in known):
            out.append(known[0])
        else:
            # different symbols meet: at run time they must be equal (or 1), so keep one of them,
            # preferring a named dim over a fresh unk__ one, as onnxruntime's symbolic inference does
            syms = [d for d in known if d is not None]
            named = [d for d in syms if not str(d).startswith("unk__")]
            out.append((named or syms or [None])[0])
    return out


def elementwise_rule(ctx: ShapeContext) -> None:
    """Output 0: the broadcast of all inputs, element type of input 0."""
    shapes = [ctx.input_shape(i) for i in range(ctx.num_inputs) if ctx.has_input(i)]
    ctx.set_output(0, ctx.input_elem(0), broadcast_dims(shapes))


def same_shape_rule(ctx: ShapeContext) -> None:
    """Output 0 has the type and shape of input 0 (unary elementwise ops)."""
    ctx.same_as_input(0)


def compare_rule(ctx: ShapeContext) -> None:
    """Broadcast shape, boolean output."""
    shapes = [ctx.input_shape(i) for i in range(ctx.num_inputs) if ctx.has_input(i)]
    ctx.set_output(0, int(DataType.BOOL), broadcast_dims(shapes))


# ---------------------------------------------------------------------------------------------
# The driver


class _Inference:
    def __init__(self, model: Model, strict: bool):
        self.model = model
        self.strict = strict
        self.opsets = model.opsets
        self.functions = model.function_map()
        self._sym = itertools.count()
        self._attr_stack: list[dict[str, Attr]] = []
        self.infos: dict[int, Info] = {}

    def new_symbol(self) -> Sym:
        return Sym.named(f"unk__{next(self._sym)}")

    def attrs(self, node: Node) -> dict[str, Attr]:
        out = {}
        for a in node.attributes.values():
            if a.ref_attr_name:
                if self._attr_stack and a.ref_attr_name in self._attr_stack[-1]:
                    ref = self._attr_stack[-1][a.ref_attr_name]
                    out[a.name] = Attr(a.name, ref.type, ref.value)
            else:
                out[a.name] = a
        return out

    def info(self, v: Value | None) -> Info | None:
        if v is None:
            return None
        got = self.infos.get(id(v))
        if got is None:
            got = info_from_type(v.type)
            c = v.const
            if isinstance(c, Tensor) and c.data_type and math.prod(c.dims) > FOLD_LIMIT:
                # a weight: its type and dims say all inference needs, without reading its data
                got = Info(None, int(c.data_type), list(c.dims))
            elif isinstance(c, Tensor | SparseTensor):
                try:
                    arr = v.const.numpy()
                    got = Info(
                        None,
                        int(from_numpy(arr.dtype)),
                        list(arr.shape),
                        arr if arr.size <= FOLD_LIMIT else None,
                    )
                except OnyxError:
                    pass
            self.infos[id(v)] = got
        return got

    def infer_graph(self, g: Graph, inputs: list[Info | None] | None = None) -> list[Info]:
        if inputs is not None:
            for v, info in zip(g.inputs, inputs):
                declared = info_from_type(v.type)
                self.infos[id(v)] = _merge(declared, info) if info is not None else declared
        for node in g.nodes:
            self.infer_node(node)
        return [self.info(v) or Info() for v in g.outputs]

    def infer_node(self, node: Node) -> None:
        ins = [self.info(v) for v in node.inputs]
        opset = opset_for(self.opsets, node.domain)
        outs: list[Info | None] = [None] * len(node.outputs)
        try:
            fn = self.functions.get((node.domain or "", node.op_type, node.overload or ""))
            if fn is not None:
                outs = self._infer_function(node, fn, ins)
            else:
                outs = self._fold(node, ins, opset) or self._by_rule(node, ins, opset)
        except _RuleFailure as e:
            if self.strict:
                msg = str(e)
                if not msg.startswith(node.describe()):
                    msg = f"{node.describe()}: {msg}"
                raise InvalidGraph(msg) from None
        except OnyxError as e:
            if self.strict and not isinstance(e, registry.OnyxNotImplemented):
                raise InvalidGraph(f"{node.describe()}: {e}") from None
        except Exception as e:  # noqa: BLE001 - a bug in a rule: the outputs stay as declared
            if self.strict:
                raise Fail(
                    f"{node.describe()}: the shape rule failed: {type(e).__name__}: {e}"
                ) from e
        for v, out in zip(node.outputs, outs):
            declared = info_from_type(v.type)
            if out is None:
                self.infos[id(v)] = declared
                continue
            if self.strict:
                _check_agree(node, v, declared, out)
            self.infos[id(v)] = _merge(declared, out)

    # -- sources -------------------------------------------------------------------------------
    def _fold(self, node: Node, ins: list[Info | None], opset: int) -> list[Info | None] | None:
        """Run the kernel when every input value is known (numbers or symbolic shape arithmetic)."""
        if not is_pure(node, opset) or any(True for _ in node.subgraphs()):
            return None
        present = [i for i in ins if i is not None]
        if any(i.value is None for i in present):
            if node.op_type in ("Shape", "Size"):
                return self._shape_of(node, ins)
            return None
        symbolic = any(i.value.dtype == object and _has_sym(i.value) for i in present)  # type: ignore[union-attr]
        if symbolic:
            if node.op_type == "Cast":
                return [Info(None, int(DataType.INT64), list(present[0].dims or []), present[0].value)]
            if node.op_type not in SYMBOLIC_OK or node.domain not in ("", "ai.onnx"):
                return None
        if sum(int(np.asarray(i.value).size) for i in present) > FOLD_LIMIT:
            return None
        try:
            bound = bind(node, opset, attributes=self.attrs(node))
        except OnyxError:
            return None
        args = [i.value if i is not None else None for i in ins]
        from onyx.optimizer.constant_folding import estimate_output_elements
        from onyx.runtime.limits import bounded_folding

        est = estimate_output_elements(node, args)
        if est is not None and est > FOLD_LIMIT:
            return None  # small inputs, huge output (Range to 2**31, ConstantOfShape): the rule says the dims
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"), bounded_folding():
                warnings.simplefilter("ignore")
                res = bound(*args)
        except Exception:  # noqa: BLE001 - folding is best effort; the rule or the run will report
            return None
        if len(node.outputs) == 1 and not isinstance(res, tuple):
            res = (res,)
        if any(not isinstance(r, np.ndarray | np.generic) for r in res):
            return None  # sequences, maps, optionals: their types come from the op's rule
        out = []
        for r in res:
            info = info_from_array(r)
            if symbolic and isinstance(r, np.ndarray) and r.dtype == object:
                info.elem = int(DataType.INT64)
            if isinstance(r, np.ndarray) and r.size > FOLD_LIMIT:
                info.value = None
            out.append(info)
        return out

    def _shape_of(self, node: Node, ins: list[Info | None]) -> list[Info | None] | None:
        x = ins[0]
        if x is None or x.dims is None:
            return None
        dims = [d if d is not None else self.new_symbol() for d in x.dims]
        if x.dims != dims and ins[0] is not None:
            x.dims = dims  # name the unknown dims so that later arithmetic can refer to them
        if node.op_type == "Size":
            total: DimLike = 1
            for d in dims:
                total = total * d
            return [
                Info(
                    None,
                    int(DataType.INT64),
                    [],
                    np.array(total, dtype=object if isinstance(total, Sym) else np.int64),
                )
            ]
        start = int(node.attr("start", 0) or 0)
        end = node.attr("end", None)
        r = len(dims)
        s = max(0, min(r, start + r if start < 0 else start))
        e = r if end is None else max(0, min(r, int(end) + r if int(end) < 0 else int(end)))
        vals = dims[s:e]
        arr = np.empty(len(vals), dtype=object)
        arr[:] = vals
        if not any(isinstance(v, Sym) for v in vals):
            arr = arr.astype(np.int64)
        return [Info(None, int(DataType.INT64), [len(vals)], arr)]

    def _by_rule(self, node: Node, ins: list[Info | None], opset: int) -> list[Info | None]:
        rule = registry.get_shape_rule(node.op_type, node.domain)
        if rule is None:
            return [None] * len(node.outputs)
        ctx = ShapeContext(self, node, ins, opset)
        rule(ctx)
        return ctx.outputs

    def _infer_function(self, node: Node, fn: Function, ins: list[Info | None]) -> list[Info | None]:
        env = {a.name: a for a in fn.attribute_protos}
        env.update(self.attrs(node))
        self._attr_stack.append(env)
        saved = self.opsets
        self.opsets = {**saved, **fn.opsets()}
        try:
            for v, info in zip(fn.inputs, ins):
                self.infos[id(v)] = info if info is not None else Info()
            for n in fn.nodes:
                self.infer_node(n)
            return [self.info(v) for v in fn.outputs]
        finally:
            self._attr_stack.pop()
            self.opsets = saved


def _has_sym(arr: np.ndarray) -> bool:
    return any(isinstance(x, Sym) for x in arr.reshape(-1).tolist())


def _merge(declared: Info, inferred: Info) -> Info:
    """Combine a declared type with an inferred one, keeping the more specific dims."""
    if inferred.type is not None and not isinstance(inferred.type, TensorType):
        return inferred if declared.type is None else declared
    if declared.type is not None and not isinstance(declared.type, TensorType):
        return declared
    elem = inferred.elem if inferred.elem is not None else declared.elem
    dims = inferred.dims
    if declared.dims is not None:
        if dims is None or len(dims) != len(declared.dims):
            dims = declared.dims
        else:
            dims = [_better(a, b) for a, b in zip(declared.dims, dims)]
    return Info(None, elem, dims, inferred.value)


def _better(declared: DimLike | None, inferred: DimLike | None) -> DimLike | None:
    if isinstance(inferred, int):
        return inferred
    if isinstance(declared, int):
        return declared
    if inferred is not None and not str(inferred).startswith("unk__"):
        return inferred
    return declared if declared is not None else inferred


def _check_agree(node: Node, v: Value, declared: Info, inferred: Info) -> None:
    if declared.elem and inferred.elem and declared.elem != inferred.elem:
        raise InvalidGraph(
            f"{node.describe()}: output {v.name!r} is declared {DataType(declared.elem).name} "
            f"but inference gives {DataType(inferred.elem).name}"
        )
    if declared.dims is not None and inferred.dims is not None:
        if len(declared.dims) != len(inferred.dims):
            raise InvalidGraph(
                f"{node.describe()}: output {v.name!r} is declared with rank {len(declared.dims)} "
                f"but inference gives rank {len(inferred.dims)}"
            )
        for axis, (a, b) in enumerate(zip(declared.dims, inferred.dims)):
            if isinstance(a, int) and isinstance(b, int) and a != b:
                raise InvalidGraph(
                    f"{node.describe()}: output {v.name!r} dim {axis} is declared {a} but inference gives {b}"
                )


def _write_back(inf: _Inference, g: Graph, main: bool = True) -> None:
    """Put what inference found onto the graph: each node output's type (listed in value_info), and, in
    the main graph, the value it is known to hold (:attr:`Value.inferred_value`, for the optimizer).
    A subgraph's outputs keep their declared types: they are the body's contract (a Loop that runs no
    iteration makes its scan outputs from them, as onnxruntime does)."""
    listed = {id(v) for v in g.value_info} | {id(v) for v in g.outputs} | {id(v) for v in g.inputs}
    contract = set() if main else {id(v) for v in g.outputs}
    for node in g.nodes:
        for v in node.outputs:
            info = inf.infos.get(id(v))
            if info is None or not v.name:
                continue
            if main:
                v.inferred_value = info.value
            t = type_of(info)
            if t is not None and id(v) not in contract:
                v.type = t
                if id(v) not in listed:
                    g.value_info.append(v)
                    listed.add(id(v))
        for sub in node.subgraphs():
            _write_back(inf, sub, main=False)


def infer_shapes(model: Model, strict: bool = False) -> Model:
    """Give every intermediate value an element type and a (symbolic) shape; returns the model.

    The model is updated in place: node outputs get types and the graph's value_info lists them, and a
    main-graph value whose contents are known at load time (shape arithmetic, small constants) keeps
    them in :attr:`Value.inferred_value` for the optimizer. ``strict`` raises InvalidGraph, naming the
    node, on a type or shape contradiction (and Fail for a rule that crashes); otherwise what cannot be
    inferred stays as declared. This is the session's stage between checking and optimizing.
    """
    if not isinstance(model, Model):
        from onyx.errors import InvalidArgument

        raise InvalidArgument(f"infer_shapes expects an onyx Model, got {type(model).__name__}")
    inf = _Inference(model, strict)
    for v in model.graph.inputs:
        # an unknown input dim gets a name, so that everything computed from it can refer to it
        info = inf.info(v)
        if info is not None and info.dims is not None and info.value is None:
            info.dims = [d if d is not None else inf.new_symbol() for d in info.dims]
    inf.infer_graph(model.graph)
    _write_back(inf, model.graph)
    return model


def type_new_nodes(model: Model, nodes: list[Node], opsets: dict[str, int] | None = None) -> None:
    """Type the outputs of ``nodes`` that a rewrite has just made, from their inputs' types (and known
    constants) by each op's own rule: the optimizer's passes keep the graph's types right without
    inferring the whole model again. A value that already has a type keeps what it declares and gains
    only what was unknown. ``opsets``: those in force where the nodes are (a function body's own)."""
    inf = _Inference(model, strict=False)
    if opsets is not None:
        inf.opsets = opsets
    for node in nodes:
        inf.infer_node(node)
        for v in node.outputs:
            info = inf.infos.get(id(v))
            t = None if info is None else type_of(info)
            if t is not None and v.name:
                v.type = t


def known_fraction(model: Model) -> tuple[int, int]:
    """(values with a known rank and no unknown dim, all node outputs) over the main graph and subgraphs."""
    known = total = 0
    for node in model.graph.walk():
        for v in node.outputs:
            if not v.name:
                continue
            total += 1
            t = v.type
            if isinstance(t, TensorType) and t.elem_type and t.shape is not None:
                if all(d is not None for d in t.shape.dims):
                    known += 1
            elif isinstance(t, SequenceType | MapType | OptionalType):
                known += 1
    return known, total


__all__ = [
    "infer_shapes",
    "ShapeContext",
    "Info",
    "broadcast_dims",
    "elementwise_rule",
    "same_shape_rule",
    "compare_rule",
    "known_fraction",
    "type_new_nodes",
    "type_of",
    "math",
]
