"""IR -> bytes: one small function per ONNX message, the mirror of decode.py.

Every function returns a :class:`~onyx.proto.wire.Writer` holding chunks; large ``raw_data`` stays a
view of its source until it is written to the file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import DataType
from onyx.ir.model import Attr, AttrType, Function, Graph, Model, Node, TrainingInfo, Value
from onyx.ir.tensor import SparseTensor, Tensor, array_to_raw
from onyx.ir.types import (
    MapType,
    OpaqueType,
    OptionalType,
    SequenceType,
    Shape,
    SparseTensorType,
    TensorType,
    TypeBase,
)
from onyx.proto.typed_data import FLOAT_DATA, INT32_DATA, typed_field_for
from onyx.proto.wire import I32, LEN, Writer, encode_varints, tag, varint

# A hook deciding how a tensor's data is written: returns True if it wrote it (as external data).
ExternalHook = Callable[[Tensor, Writer], bool]


def _entries(w: Writer, fn: int, entries: list[tuple[str, str]]) -> None:
    for k, v in entries:
        e = Writer()
        e.string(1, k)
        e.string(2, v)
        w.message(fn, e)


def _opsets(w: Writer, fn: int, opsets: list[tuple[str, int]]) -> None:
    for d, v in opsets:
        e = Writer()
        _opt_str(e, 1, d)
        if v is not None:
            e.uint(2, v)
        w.message(fn, e)


def _unknown(w: Writer, unknown: list[bytes]) -> None:
    for b in unknown:
        w.raw(b)


def _opt_str(w: Writer, fn: int, s: str | None) -> None:
    if s is not None:
        w.string(fn, s)


# ---------------------------------------------------------------------------------------------
# Tensors


def encode_tensor(t: Tensor, hook: ExternalHook | None = None) -> Writer:
    """TensorProto."""
    w = Writer()
    for d in t.dims:
        w.uint(1, d)
    if t.data_type or "data_type" in t.explicit:
        w.uint(2, t.data_type)
    if t.segment is not None:
        s = Writer()
        if t.segment[0] is not None:
            s.uint(1, t.segment[0])
        if t.segment[1] is not None:
            s.uint(2, t.segment[1])
        w.message(3, s)
    # fields go out in field-number order, as protobuf writers do: the data field lands before the
    # name (float/int32/string/int64 data: 4-7) or after it (raw/double/uint64 data: 9-11)
    ext = Writer()
    data = Writer()
    data_field = 9
    if hook is not None and hook(t, ext):
        pass  # written as external data by the hook (external_data entries + data_location)
    elif t.external is not None and t.raw is None and t.typed is None and t._array is None:
        _entries(ext, 13, t.external.entries)
        if t.data_location is not None:
            ext.uint(14, t.data_location)
    else:
        data_field = _tensor_data(t, data)
        if t.data_location is not None and t.data_location != 1:
            ext.uint(14, t.data_location)
    if data.size and data_field < 8:
        w.extend(data)
    _opt_str(w, 8, t.name)
    if data.size and data_field > 8:
        w.extend(data)
    _opt_str(w, 12, t.doc_string)
    w.extend(ext)
    _entries(w, 16, t.metadata_props)
    _unknown(w, t.unknown)
    return w


def _tensor_data(t: Tensor, w: Writer) -> int:
    """Write the tensor's data field; return its field number."""
    if t.typed is not None:
        return _typed(t, w)
    if t.raw is not None:
        w.bytes_(9, t.raw)
    elif t._array is not None:
        arr = t._array
        dt = DataType(t.data_type)
        if dt == DataType.STRING:
            for s in arr.reshape(-1).tolist():
                w.bytes_(6, s.encode("utf-8", errors="surrogateescape") if isinstance(s, str) else bytes(s))
            return 6
        w.bytes_(9, array_to_raw(arr, dt))
    elif t.external is not None:
        w.bytes_(9, t.raw_bytes())
    return 9


def _typed(t: Tensor, w: Writer) -> int:
    fn = t.typed_field if t.typed_field is not None else typed_field_for(t.data_type)
    segs = t.typed or []
    if fn == 6:
        for s in segs:
            w.bytes_(6, s)
        return fn
    payload = Writer()
    for seg in segs:
        if isinstance(seg, tuple):
            _, buf, span = seg
            payload.raw(
                memoryview(buf)[span[0] : span[1]] if not isinstance(buf, bytes) else buf[span[0] : span[1]]
            )
        elif fn == FLOAT_DATA:
            payload.raw(np.float32(seg).tobytes())
        elif fn == 10:
            payload.raw(np.float64(seg).tobytes())
        else:
            payload.raw(varint(int(seg)))
    if payload.size or segs:
        w.raw(tag(fn, LEN) + varint(payload.size))
        w.parts.extend(payload.parts)
        w.size += payload.size
    return fn


def encode_sparse_tensor(st: SparseTensor, hook: ExternalHook | None = None) -> Writer:
    """SparseTensorProto."""
    w = Writer()
    if "values" not in st.explicit:
        w.message(1, encode_tensor(st.values, hook))
    if "indices" not in st.explicit:
        w.message(2, encode_tensor(st.indices, hook))
    for d in st.dims:
        w.uint(3, d)
    _unknown(w, st.unknown)
    return w


# ---------------------------------------------------------------------------------------------
# Types


def encode_shape(s: Shape) -> Writer:
    """TensorShapeProto."""
    w = Writer()
    for i, d in enumerate(s.dims):
        dw = Writer()
        if isinstance(d, bool):
            raise InvalidArgument(f"shape dim {d!r} is not an int or a name")
        if isinstance(d, int):
            dw.uint(1, d)
        elif isinstance(d, str):
            dw.string(2, d)
        if s.denotations is not None and s.denotations[i] is not None:
            dw.string(3, s.denotations[i])
        if s.dim_unknown is not None:
            _unknown(dw, s.dim_unknown[i])
        w.message(1, dw)
    _unknown(w, s.unknown)
    return w


def encode_type(t: TypeBase) -> Writer:
    """TypeProto."""
    w = Writer()
    if t.denotation is not None and isinstance(t, OpaqueType | SparseTensorType | OptionalType):
        w.string(6, t.denotation)  # field-number order: denotation (6) comes before fields 7-9
    inner = Writer()
    if isinstance(t, TensorType):
        if t.elem_type is not None:
            inner.uint(1, t.elem_type)
        if t.shape is not None:
            inner.message(2, encode_shape(t.shape))
        _unknown(inner, t.inner_unknown)
        w.message(8 if isinstance(t, SparseTensorType) else 1, inner)
    elif isinstance(t, SequenceType | OptionalType):
        if t.elem is not None:
            inner.message(1, encode_type(t.elem))
        _unknown(inner, t.inner_unknown)
        w.message(4 if isinstance(t, SequenceType) else 9, inner)
    elif isinstance(t, MapType):
        if t.key_type is not None:
            inner.uint(1, t.key_type)
        if t.value is not None:
            inner.message(2, encode_type(t.value))
        _unknown(inner, t.inner_unknown)
        w.message(5, inner)
    elif isinstance(t, OpaqueType):
        _opt_str(inner, 1, t.domain)
        _opt_str(inner, 2, t.name)
        _unknown(inner, t.inner_unknown)
        w.message(7, inner)
    if t.denotation is not None and not isinstance(t, OpaqueType | SparseTensorType | OptionalType):
        w.string(6, t.denotation)
    _unknown(w, t.unknown)
    return w


def encode_value_info(v: Value, override=None) -> Writer:
    """ValueInfoProto for a value (or a graph's own override of it)."""
    src = override if override is not None else v
    w = Writer()
    w.string(1, v.name)
    if src.type is not None:
        w.message(2, encode_type(src.type))
    _opt_str(w, 3, src.doc_string)
    _entries(w, 4, src.metadata_props)
    _unknown(w, src.unknown)
    return w


# ---------------------------------------------------------------------------------------------
# Attributes, nodes, graphs


def encode_attribute(a: Attr, hook: ExternalHook | None = None) -> Writer:
    """AttributeProto."""
    out = Writer()
    out.string(1, a.name)
    w = Writer()  # the value, placed by its field number below
    t = a.type
    v = a.value
    if not a.explicit.get("no_value") and v is not None:
        if t == AttrType.FLOAT:
            w.float32(2, v)
        elif t == AttrType.INT:
            w.uint(3, int(v))
        elif t == AttrType.STRING:
            w.bytes_(4, v.encode("utf-8") if isinstance(v, str) else v)
        elif t == AttrType.TENSOR:
            w.message(5, encode_tensor(v, hook))
        elif t == AttrType.GRAPH:
            w.message(6, encode_graph(v, hook))
        elif t == AttrType.SPARSE_TENSOR:
            w.message(22, encode_sparse_tensor(v, hook))
        elif t == AttrType.TYPE_PROTO:
            w.message(14, encode_type(v))
        elif t == AttrType.FLOATS:
            for x in v:
                w.float32(7, x)
        elif t == AttrType.INTS:
            for x in v:
                w.uint(8, int(x))
        elif t == AttrType.STRINGS:
            for x in v:
                w.bytes_(9, x.encode("utf-8") if isinstance(x, str) else x)
        elif t == AttrType.TENSORS:
            for x in v:
                w.message(10, encode_tensor(x, hook))
        elif t == AttrType.GRAPHS:
            for x in v:
                w.message(11, encode_graph(x, hook))
        elif t == AttrType.SPARSE_TENSORS:
            for x in v:
                w.message(23, encode_sparse_tensor(x, hook))
        elif t == AttrType.TYPE_PROTOS:
            for x in v:
                w.message(15, encode_type(x))
    # field-number order: values 2-11, doc_string 13, type protos 14-15, type 20, ref 21, sparse 22-23
    vf = _FIELD_OF_ATTR.get(t, 0)
    if vf < 13:
        out.extend(w)
    _opt_str(out, 13, a.doc_string)
    if 13 < vf < 20:
        out.extend(w)
    if not a.explicit.get("type_absent"):
        out.uint(20, int(a.type))
    if a.ref_attr_name is not None:
        out.string(21, a.ref_attr_name)
    if vf > 21:
        out.extend(w)
    _unknown(out, a.unknown)
    return out


_FIELD_OF_ATTR = {
    AttrType.FLOAT: 2,
    AttrType.INT: 3,
    AttrType.STRING: 4,
    AttrType.TENSOR: 5,
    AttrType.GRAPH: 6,
    AttrType.FLOATS: 7,
    AttrType.INTS: 8,
    AttrType.STRINGS: 9,
    AttrType.TENSORS: 10,
    AttrType.GRAPHS: 11,
    AttrType.TYPE_PROTO: 14,
    AttrType.TYPE_PROTOS: 15,
    AttrType.SPARSE_TENSOR: 22,
    AttrType.SPARSE_TENSORS: 23,
}


def encode_node(n: Node, hook: ExternalHook | None = None) -> Writer:
    """NodeProto."""
    w = Writer()
    for v in n.inputs:
        w.string(1, v.name if v is not None else "")
    for v in n.outputs:
        w.string(2, v.name)
    _opt_str(w, 3, n.name)
    if n.op_type or "op_type" in n.explicit:
        w.string(4, n.op_type)
    for a in n.attributes.values():
        w.message(5, encode_attribute(a, hook))
    _opt_str(w, 6, n.doc_string)
    if n.domain or "domain" in n.explicit:
        w.string(7, n.domain)
    _opt_str(w, 8, n.overload)
    _entries(w, 9, n.metadata_props)
    _unknown(w, n.unknown)
    return w


def encode_graph(g: Graph, hook: ExternalHook | None = None) -> Writer:
    """GraphProto."""
    w = Writer()
    for n in g.nodes:
        w.message(1, encode_node(n, hook))
    _opt_str(w, 2, g.name)
    for v in g.initializers.values():
        if v.const is not None and not isinstance(v.const, SparseTensor):
            w.message(5, encode_tensor(v.const, hook))
    _opt_str(w, 10, g.doc_string)
    for v in g.inputs:
        w.message(11, encode_value_info(v, g.override_for("input", v)))
    for v in g.outputs:
        w.message(12, encode_value_info(v, g.override_for("output", v)))
    for v in g.value_info:
        w.message(13, encode_value_info(v, g.override_for("value_info", v)))
    for b in g.quantization_annotation:
        w.bytes_(14, b)
    for v in g.initializers.values():
        if isinstance(v.const, SparseTensor):
            w.message(15, encode_sparse_tensor(v.const, hook))
    _entries(w, 16, g.metadata_props)
    _unknown(w, g.unknown)
    return w


def encode_function(f: Function, hook: ExternalHook | None = None) -> Writer:
    """FunctionProto."""
    w = Writer()
    if f.name or "name" in f.explicit:
        w.string(1, f.name)
    for v in f.inputs:
        w.string(4, v.name)
    for v in f.outputs:
        w.string(5, v.name)
    for a in f.attributes:
        w.string(6, a)
    for n in f.nodes:
        w.message(7, encode_node(n, hook))
    _opt_str(w, 8, f.doc_string)
    _opsets(w, 9, f.opset_imports)
    if f.domain or "domain" in f.explicit:
        w.string(10, f.domain)
    for a in f.attribute_protos:
        w.message(11, encode_attribute(a, hook))
    for v in f.value_info:
        w.message(12, encode_value_info(v, f.graph.override_for("value_info", v)))
    _opt_str(w, 13, f.overload)
    _entries(w, 14, f.metadata_props)
    _unknown(w, f.unknown)
    return w


def encode_training_info(ti: TrainingInfo, hook: ExternalHook | None = None) -> Writer:
    """TrainingInfoProto."""
    w = Writer()
    if ti.initialization is not None:
        w.message(1, encode_graph(ti.initialization, hook))
    if ti.algorithm is not None:
        w.message(2, encode_graph(ti.algorithm, hook))
    _entries(w, 3, ti.initialization_binding)
    _entries(w, 4, ti.update_binding)
    _unknown(w, ti.unknown)
    return w


def encode_model(m: Model, hook: ExternalHook | None = None) -> Writer:
    """ModelProto."""
    w = Writer()
    if m.ir_version is not None:
        w.uint(1, m.ir_version)
    _opt_str(w, 2, m.producer_name)
    _opt_str(w, 3, m.producer_version)
    _opt_str(w, 4, m.domain)
    if m.model_version is not None:
        w.uint(5, m.model_version)
    _opt_str(w, 6, m.doc_string)
    if m.graph is not None:
        w.message(7, encode_graph(m.graph, hook))
    _opsets(w, 8, m.opset_imports)  # field-number order, as protobuf writers (and onnx) do
    _entries(w, 14, m.metadata_props)
    for ti in m.training_info:
        w.message(20, encode_training_info(ti, hook))
    for f in m.functions:
        w.message(25, encode_function(f, hook))
    for b in m.configuration:
        w.bytes_(26, b)
    _unknown(w, m.unknown)
    return w


def packed_int32_field(values: Any) -> bytes:
    """Helper for tests: the packed int32_data payload of ``values``."""
    arr = np.asarray(values, dtype=np.int64)
    return (
        tag(INT32_DATA, LEN)
        + varint(len(encode_varints(arr.view(np.uint64))))
        + encode_varints(arr.view(np.uint64))
    )


__all__ = [
    "encode_model",
    "encode_graph",
    "encode_node",
    "encode_attribute",
    "encode_tensor",
    "encode_sparse_tensor",
    "encode_type",
    "encode_value_info",
    "encode_function",
    "I32",
]
