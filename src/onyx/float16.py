"""Convert a model's float32 tensors to float16 (onnxconverter-common's ``convert_float_to_float16``,
without its known traps).

Every float32 value becomes float16: initializers (their values clamped into float16's range),
``Constant`` / ``ConstantOfShape`` tensors, value types, attributes that name float as an output type
(``Cast(to=FLOAT)``, ``RandomNormal(dtype)``, ``EyeLike(dtype)``...), subgraphs included. What must stay
float32 stays float32, with ``Cast`` nodes at the boundary:

* nodes of the block list (by default the operators onnxruntime's CPU provider has no float16 kernel
  for, or whose spec takes no float16: the ai.onnx.ml operators, Range, Resize, NonMaxSuppression...)
  and of ``node_block_list``; a blocked node with subgraphs keeps those subgraphs float32;
* inputs the spec fixes to float32 on an op that is not blocked (Resize's and Upsample's scales);
* the model's inputs and outputs with ``keep_io_types``.

A constant read only where float32 is needed stays float32 (no cast, no loss). Values are clamped as
onnxconverter-common clamps them: a finite value of magnitude below ``min_positive_val`` (but not 0)
becomes +-``min_positive_val``, one above ``max_finite_val`` +-``max_finite_val``; infinities and NaN stay.
The nodes come out topologically sorted.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.model import Attr, AttrType, Graph, Model, Node, Value
from onyx.ir.tensor import Tensor
from onyx.ir.types import OptionalType, SequenceType, TensorType, TypeBase

FLOAT, FLOAT16 = 1, 10
FLOAT16_MAX = 65504.0

#: operators kept float32 by default: no float16 kernel in onnxruntime's CPU provider, or no float16
#: in their spec (onnxconverter-common's list, with the quantization and random operators added)
DEFAULT_OP_BLOCK_LIST = [
    "ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer",
    "FeatureVectorizer", "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor",
    "Normalizer", "OneHotEncoder", "RandomUniformLike", "SVMClassifier", "SVMRegressor", "Scaler",
    "TreeEnsembleClassifier", "TreeEnsembleRegressor", "TreeEnsemble", "ZipMap", "NonMaxSuppression",
    "TopK", "RoiAlign", "Resize", "Range", "CumSum", "Min", "Max", "Upsample",
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "TfIdfVectorizer",
    "RandomNormal", "RandomUniform", "RandomNormalLike", "Bernoulli", "Multinomial",
    # quantized operators: their scales are tensor(float) whatever the rest of the model is
    "QLinearConv", "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu",
    "QLinearAveragePool", "QLinearGlobalAveragePool", "QLinearConcat", "QLinearSoftmax", "QGemm",
    "QAttention", "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "DynamicQuantizeLSTM",
]  # fmt: skip

#: (op type, input index) that the spec types tensor(float) whatever the other inputs are
FLOAT32_INPUTS = {("Resize", 2), ("Upsample", 1)}
#: attributes naming the output's element type, with the default when absent (None: follows an input)
DTYPE_ATTRS = {
    "Cast": ("to", None),
    "RandomNormal": ("dtype", FLOAT),
    "RandomUniform": ("dtype", FLOAT),
    "RandomNormalLike": ("dtype", None),
    "EyeLike": ("dtype", None),
    "Bernoulli": ("dtype", None),
    "HannWindow": ("output_datatype", FLOAT),
    "HammingWindow": ("output_datatype", FLOAT),
    "BlackmanWindow": ("output_datatype", FLOAT),
    "MelWeightMatrix": ("output_datatype", FLOAT),
    "SequenceEmpty": ("dtype", FLOAT),
}
_STANDARD_DOMAINS = ("", "ai.onnx", "com.microsoft")


def convert_float_to_float16(
    model: Model | str | os.PathLike,
    min_positive_val: float = 5.96e-08,
    max_finite_val: float = 65504.0,
    keep_io_types: bool = False,
    disable_shape_infer: bool = False,
    op_block_list: Iterable[str] | None = None,
    node_block_list: Iterable[str] | None = None,
) -> Model:
    """Convert ``model`` (an onyx Model, changed in place, or a path) to float16; returns the model.

    ``op_block_list`` replaces :data:`DEFAULT_OP_BLOCK_LIST`; ``node_block_list`` names nodes to keep
    float32. Shape inference runs first (``disable_shape_infer`` to rely on the types the model
    declares: values of unknown type are then left as they are).
    """
    if isinstance(model, str | os.PathLike):
        from onyx.model_io import load

        model = load(model)
    if not isinstance(model, Model):
        raise InvalidArgument(
            f"convert_float_to_float16 expects an onyx Model or a model path, got {type(model).__name__}"
        )
    lo, hi = _check_range(min_positive_val, max_finite_val)
    ops = _names(op_block_list, "op_block_list", DEFAULT_OP_BLOCK_LIST)
    nodes = _names(node_block_list, "node_block_list", [])
    declared = {id(g): list(g.value_info) for g in _graphs(model.graph)}
    if not disable_shape_infer:
        from onyx.shape_inference import infer_shapes

        infer_shapes(model)  # the types of every value, to know which are float32
    _Converter(model, lo, hi, ops, nodes, bool(keep_io_types)).run()
    for g in _graphs(model.graph):  # the file lists what it listed before, no more
        if id(g) in declared:
            g.value_info[:] = declared[id(g)]
    return model


def _graphs(g: Graph) -> list[Graph]:
    out = [g]
    for n in g.nodes:
        for sub in n.subgraphs():
            out.extend(_graphs(sub))
    return out


def convert_float_to_float16_model_path(
    model_path: str | os.PathLike,
    min_positive_val: float = 5.96e-08,
    max_finite_val: float = 65504.0,
    keep_io_types: bool = False,
) -> Model:
    """:func:`convert_float_to_float16` of the model at ``model_path`` (its external data included)."""
    if not isinstance(model_path, str | os.PathLike):
        raise InvalidArgument(f"model_path must be a path, got {type(model_path).__name__}")
    return convert_float_to_float16(
        model_path,
        min_positive_val=min_positive_val,
        max_finite_val=max_finite_val,
        keep_io_types=keep_io_types,
    )


def _check_range(lo: float, hi: float) -> tuple[float, float]:
    try:
        lo, hi = float(lo), float(hi)
    except (TypeError, ValueError):
        raise InvalidArgument(
            f"min_positive_val and max_finite_val must be numbers, got {lo!r}, {hi!r}"
        ) from None
    if not 0 < lo <= hi <= FLOAT16_MAX:
        raise InvalidArgument(
            f"need 0 < min_positive_val <= max_finite_val <= {FLOAT16_MAX}, got {lo} and {hi}"
        )
    return lo, hi


def _names(items, what: str, default: list[str]) -> frozenset[str]:
    if items is None:
        return frozenset(default)
    if isinstance(items, str) or not isinstance(items, Iterable):
        raise InvalidArgument(f"{what} must be a list of names, got {items!r}")
    items = list(items)
    if not all(isinstance(x, str) for x in items):
        raise InvalidArgument(f"{what} must hold strings, got {items!r}")
    return frozenset(items)


# -- types and data -------------------------------------------------------------------------------
def _is_f32(t: TypeBase | None) -> bool:
    if isinstance(t, TensorType):
        return t.elem_type == FLOAT
    if isinstance(t, SequenceType | OptionalType):
        return _is_f32(t.elem)
    return False


def _to_f16(t: TypeBase):
    """A copy of the float32 type ``t`` with float16 elements (tensor, sequence or optional)."""
    if isinstance(t, TensorType):
        return type(t)(FLOAT16, t.shape)
    if isinstance(t, SequenceType):
        return SequenceType(_to_f16(t.elem))
    return OptionalType(_to_f16(t.elem))


def to_float16(array: np.ndarray, min_positive_val: float = 5.96e-08, max_finite_val: float = 65504.0):
    """``array`` as float16, finite values clamped: 0 < |x| < min -> +-min, |x| > max -> +-max."""
    a = np.asarray(array, np.float32)
    mag = np.abs(a)
    with np.errstate(invalid="ignore"):
        small = (mag > 0) & (mag < min_positive_val)
        big = np.isfinite(a) & (mag > max_finite_val)
    if small.any() or big.any():
        a = a.copy()
        a[small] = np.copysign(np.float32(min_positive_val), a[small])
        a[big] = np.copysign(np.float32(max_finite_val), a[big])
    return a.astype(np.float16)


# -- the conversion --------------------------------------------------------------------------------
class _Converter:
    """One model's conversion: which nodes stay float32, then every float32 value decided once."""

    def __init__(self, model: Model, lo: float, hi: float, ops: frozenset, nodes: frozenset, keep_io: bool):
        self.model, self.lo, self.hi, self.keep_io = model, lo, hi, keep_io
        self.block_ops, self.block_nodes = ops, nodes
        self.blocked: set[int] = set()
        self.graphs: list[Graph] = []
        self.frozen: set[int] = set()  # graphs inside a blocked node: left float32 as a whole
        self.where: dict[int, Graph] = {}  # id(node) -> its graph
        self.casts: dict[tuple[int, int, int], Value] = {}  # (value, graph, to) -> cast result
        self.counter = 0

    def run(self) -> None:
        self._collect(self.model.graph, blocked=False)
        values = self._float_values()
        for v, g in values:
            self._decide(v, g)
        for g in self.graphs:
            _toposort(g)

    # which nodes stay float32 -------------------------------------------------------------------
    def _collect(self, g: Graph, blocked: bool) -> None:
        self.graphs.append(g)
        if blocked:
            self.frozen.add(id(g))
        for n in g.nodes:
            self.where[id(n)] = g
            b = blocked or self._blocks(n)
            if b:
                self.blocked.add(id(n))
            for sub in n.subgraphs():
                self._collect(sub, b)

    def _blocks(self, n: Node) -> bool:
        if n.op_type in self.block_ops or (n.name and n.name in self.block_nodes):
            return True
        return (n.domain or "") not in _STANDARD_DOMAINS  # custom ops: their types are unknown

    def _needs_f32(self, node: Node, i: int) -> bool:
        return id(node) in self.blocked or (node.op_type, i) in FLOAT32_INPUTS

    # the float32 values, each with the graph that defines it ----------------------------------------
    def _float_values(self) -> list[tuple[Value, Graph]]:
        out: dict[int, tuple[Value, Graph]] = {}
        for g in self.graphs:
            if id(g) in self.frozen:
                continue
            defined = list(g.inputs) + list(g.initializers.values())
            defined += [v for n in g.nodes for v in n.outputs]
            for v in defined:
                if _is_f32(v.type) or (isinstance(v.const, Tensor) and v.const.data_type == FLOAT):
                    out.setdefault(id(v), (v, g))
        return list(out.values())

    def _decide(self, v: Value, g: Graph) -> None:
        main = g is self.model.graph
        is_input = any(x is v for x in g.inputs)
        is_output = any(x is v for x in g.outputs)
        producer = v.producer
        f32_uses = [(n, i) for n, i in v.uses if self._needs_f32(n, i)]
        if producer is not None and id(producer) in self.blocked:
            stays = True  # a blocked node makes float32
        elif is_input:
            stays = main and self.keep_io
        elif producer is None or _keeps_type(producer):
            # a constant (initializer, Constant, Cast to float...) read only where float32 is needed
            stays = bool(v.uses) and len(f32_uses) == len(v.uses) and not is_output
        else:
            stays = False
        if stays:
            self._keep_f32(v, g, f32_uses, is_output and not (main and self.keep_io))
        else:
            self._make_f16(v, g, f32_uses, is_output and main and self.keep_io)

    def _keep_f32(self, v: Value, g: Graph, f32_uses, output_wants_f16: bool) -> None:
        """``v`` stays float32; the readers that take float16 read a Cast of it."""
        others = [(n, i) for n, i in v.uses if not self._needs_f32(n, i)]
        self._redirect(v, others, FLOAT16)
        if output_wants_f16:  # a graph output produced float32: the output becomes a float16 cast
            self._swap_output(v, g, FLOAT16)

    def _make_f16(self, v: Value, g: Graph, f32_uses, output_wants_f32: bool) -> None:
        """``v`` becomes float16 (its data, its producer's type attribute); float32 readers read a Cast."""
        if v.type is not None:
            v.type = _to_f16(v.type)
        if isinstance(v.const, Tensor) and v.const.data_type == FLOAT:
            v.const = Tensor.from_numpy(to_float16(v.const.numpy(), self.lo, self.hi), v.const.name)
        elif v.const is None and v.type is None:
            v.type = TensorType(FLOAT16)
        if v.producer is not None and v.index == 0:
            self._retype_producer(v.producer)
        for gg in self.graphs:
            for key in [k for k, ov in gg.overrides.items() if ov.value is v]:
                del gg.overrides[key]
        self._redirect(v, f32_uses, FLOAT)
        if output_wants_f32:
            self._swap_output(v, g, FLOAT)

    def _retype_producer(self, n: Node) -> None:
        """The attributes that make ``n`` produce float now say float16."""
        if n.op_type == "Constant":
            _constant_to_f16(n, self.lo, self.hi)
        elif n.op_type == "ConstantOfShape":
            a = n.attributes.get("value")
            if a is None:
                arr = np.zeros(1, np.float16)
            else:
                arr = to_float16(a.value.numpy(), self.lo, self.hi) if a.value.data_type == FLOAT else None
            if arr is not None:
                n.attributes["value"] = Attr("value", AttrType.TENSOR, Tensor.from_numpy(arr))
        elif n.op_type in DTYPE_ATTRS and (n.domain or "") in ("", "ai.onnx"):
            name, default = DTYPE_ATTRS[n.op_type]
            a = n.attributes.get(name)
            current = a.value if a is not None else default
            if current == FLOAT:
                n.attributes[name] = Attr(name, AttrType.INT, FLOAT16)

    # casts -------------------------------------------------------------------------------------------
    def _redirect(self, v: Value, uses, to: int) -> None:
        """Make each (node, input) of ``uses`` read ``v`` cast to ``to`` (one Cast per graph)."""
        for node, i in list(uses):
            g = self.where[id(node)]
            c = self._cast(v, g, to, before=node)
            node.set_input(i, c)

    def _cast(self, v: Value, g: Graph, to: int, before: Node) -> Value:
        key = (id(v), id(g), to)
        c = self.casts.get(key)
        if c is None:
            self.counter += 1
            suffix = "fp16" if to == FLOAT16 else "fp32"
            c = Value(f"{v.name}_cast_{suffix}_{self.counter}", _typed(v.type, to))
            node = Node(
                "Cast", [v], [c], {"to": Attr("to", AttrType.INT, to)}, name=f"{v.name}_Cast_{suffix}"
            )
            g.insert_node(g.nodes.index(before), node)
            self.where[id(node)] = g
            self.casts[key] = c
        return c

    def _swap_output(self, v: Value, g: Graph, to: int) -> None:
        """Graph output ``v`` must be of type ``to``: ``v`` (keeping its name) becomes a Cast of what its
        producer made, now a fresh value read by every former reader."""
        self.counter += 1
        inner = Value(f"{v.name}_{'fp32' if to == FLOAT16 else 'fp16'}_{self.counter}", v.type)
        for node, i in list(v.uses):
            node.set_input(i, inner)
        p = v.producer
        if p is not None:
            p.outputs[v.index] = inner
            inner.producer, inner.index = p, v.index
            pos = g.nodes.index(p) + 1
        else:  # a graph input or an initializer that is also an output
            pos = 0
            if any(x is v for x in g.inputs):
                g.inputs[g.inputs.index(v)] = inner
            if g.initializers.get(v.name) is v:
                del g.initializers[v.name]
                inner.const, v.const = v.const, None
                g.initializers[inner.name] = inner
        v.type = _typed(inner.type, to)
        v.producer = None
        cast = Node("Cast", [inner], [], {"to": Attr("to", AttrType.INT, to)}, name=f"{v.name}_Cast_out")
        cast.append_output(v)
        g.insert_node(pos, cast)
        self.where[id(cast)] = g


def _typed(t: TypeBase | None, to: int) -> TypeBase:
    if t is None:
        return TensorType(to)
    if isinstance(t, TensorType):
        return type(t)(to, t.shape)
    if isinstance(t, SequenceType):
        return SequenceType(_typed(t.elem, to))
    if isinstance(t, OptionalType):
        return OptionalType(_typed(t.elem, to))
    return t


def _keeps_type(n: Node) -> bool:
    """Producers whose output may as well stay float32 when only float32 readers read it."""
    if n.op_type in ("Constant", "ConstantOfShape"):
        return True
    return n.op_type == "Cast" and n.attr("to") == FLOAT


def _constant_to_f16(n: Node, lo: float, hi: float) -> None:
    for name in ("value", "value_float", "value_floats"):
        a = n.attributes.get(name)
        if a is None:
            continue
        if name == "value":
            if isinstance(a.value, Tensor) and a.value.data_type == FLOAT:
                arr = to_float16(a.value.numpy(), lo, hi)
                n.attributes["value"] = Attr("value", AttrType.TENSOR, Tensor.from_numpy(arr, a.value.name))
        else:
            arr = to_float16(np.asarray(a.value, np.float32), lo, hi)
            del n.attributes[name]
            n.attributes["value"] = Attr("value", AttrType.TENSOR, Tensor.from_numpy(arr))


def _toposort(g: Graph) -> None:
    """Order ``g``'s nodes so that each comes after the producers of what it (or its subgraphs) reads,
    keeping the original order where it already holds."""
    index = {id(n): k for k, n in enumerate(g.nodes)}
    deps: dict[int, set[int]] = {}
    for n in g.nodes:
        need = set()
        for v in _reads(n):
            p = v.producer
            if p is not None and id(p) in index and p is not n:
                need.add(id(p))
        deps[id(n)] = need
    done: set[int] = set()
    order: list[Node] = []
    pending = list(g.nodes)
    while pending:
        rest = []
        for n in pending:
            if deps[id(n)] <= done:
                order.append(n)
                done.add(id(n))
            else:
                rest.append(n)
        if len(rest) == len(pending):  # a cycle: leave the rest as it was (the checker reports it)
            order.extend(rest)
            break
        pending = rest
    g.nodes[:] = order


def _reads(n: Node) -> list[Value]:
    out = [v for v in n.inputs if v is not None]
    for sub in n.subgraphs():
        for m in sub.walk():
            out.extend(v for v in m.inputs if v is not None)
    return out
