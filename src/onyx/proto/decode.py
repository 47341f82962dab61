"""bytes -> IR: one small function per ONNX message.

Field numbers come from onnx.proto. Fields this module does not know, and known fields arriving with an
unexpected wire type, are kept verbatim in ``.unknown`` and written back by the encoder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from onyx.errors import InvalidProtobuf
from onyx.ir.model import Attr, AttrType, Function, Graph, Model, Node, TrainingInfo, Value, ValueInfoOverride
from onyx.ir.tensor import ExternalData, SparseTensor, Tensor
from onyx.ir.types import (
    MapType,
    OpaqueType,
    OptionalType,
    SequenceType,
    Shape,
    SparseTensorType,
    TensorType,
    TypeBase,
    UnknownType,
)
from onyx.proto.wire import (
    I32,
    LEN,
    VARINT,
    f32,
    iter_fields,
    packed_varints,
    text,
    to_int32,
    to_signed,
    unpacked_run,
)

MAX_DEPTH = 64


class Ctx:
    """Decoding state: the buffer, the nesting depth and how to resolve external data."""

    __slots__ = ("buf", "depth", "external", "owner")

    def __init__(self, buf: Any, external: Callable[[Tensor], None] | None = None, owner: Any = None):
        self.buf = buf
        self.depth = 0
        self.external = external
        self.owner = owner

    def enter(self, offset: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise InvalidProtobuf(f"messages nested deeper than {MAX_DEPTH} levels", offset)

    def leave(self) -> None:
        self.depth -= 1


def _raw(ctx: Ctx, start: int, wt: int, val: Any) -> bytes:
    """The verbatim bytes of a field (for unknown fields)."""
    buf = ctx.buf
    if wt == LEN:
        return bytes(buf[start : val[1]])
    if wt == VARINT:
        # re-encode: the original may have had redundant bytes, the value is what matters
        from onyx.proto.wire import tag, varint

        return tag(_fn_from(buf, start), VARINT) + varint(val)
    if wt == I32:
        from onyx.proto.wire import tag

        return tag(_fn_from(buf, start), I32) + val
    if wt == 1:
        from onyx.proto.wire import tag

        return tag(_fn_from(buf, start), 1) + val
    raise InvalidProtobuf("groups are not supported in ONNX messages", start)


def _fn_from(buf: Any, start: int) -> int:
    from onyx.proto.wire import read_varint

    key, _ = read_varint(buf, start, len(buf))
    return key >> 3


def _ints(ctx: Ctx, wt: int, val: Any, out: list[int]) -> bool:
    """Append a repeated int64 field's values (packed or not). False if the wire type is wrong."""
    if wt == VARINT:
        out.append(to_signed(val))
        return True
    if wt == LEN:
        out.extend(packed_varints(ctx.buf, val).view("int64").tolist())
        return True
    return False


def _floats(ctx: Ctx, wt: int, val: Any, out: list[float]) -> bool:
    import numpy as np

    if wt == I32:
        out.append(f32(val))
        return True
    if wt == LEN:
        a, b = val
        if (b - a) % 4:
            raise InvalidProtobuf("packed float field length is not a multiple of 4", a)
        out.extend(np.frombuffer(ctx.buf, dtype="<f4", count=(b - a) // 4, offset=a).tolist())
        return True
    return False


def _entry(ctx: Ctx, span: tuple[int, int]) -> tuple[str, str]:
    key = value = ""
    for fn, wt, val, _ in iter_fields(ctx.buf, span[0], span[1]):
        if wt != LEN:
            continue
        if fn == 1:
            key = text(ctx.buf, val)
        elif fn == 2:
            value = text(ctx.buf, val)
    return key, value


def _opset(ctx: Ctx, span: tuple[int, int]) -> tuple[str | None, int | None]:
    domain, version = None, None
    for fn, wt, val, _ in iter_fields(ctx.buf, span[0], span[1]):
        if fn == 1 and wt == LEN:
            domain = text(ctx.buf, val)
        elif fn == 2 and wt == VARINT:
            version = to_signed(val)
    return domain, version


# ---------------------------------------------------------------------------------------------
# Tensors


def decode_tensor(ctx: Ctx, span: tuple[int, int]) -> Tensor:
    """TensorProto."""
    buf = ctx.buf
    t = Tensor()
    dims: list[int] = []
    explicit = set()
    typed: list[Any] = []
    typed_field = None
    ext_entries: list[tuple[str, str]] | None = None
    for fn, wt, val, start in iter_fields(buf, span[0], span[1]):
        if fn == 1 and _ints(ctx, wt, val, dims):
            continue
        if fn == 2 and wt == VARINT:
            t.data_type = to_int32(val)
            if t.data_type == 0:
                explicit.add("data_type")
        elif fn == 9 and wt == LEN:
            t.raw = memoryview(buf)[val[0] : val[1]] if not isinstance(buf, bytes) else buf[val[0] : val[1]]
        elif fn in (4, 5, 7, 10, 11):
            if typed_field is not None and typed_field != fn:
                # two typed fields set: keep the extra verbatim
                t.unknown.append(_raw(ctx, start, wt, val))
                continue
            if wt == LEN:
                typed.append(("packed", buf, val))
            elif fn in (5, 7, 11) and wt == VARINT:
                typed.append(to_signed(val) if fn == 7 else (to_int32(val) if fn == 5 else val))
            elif fn == 4 and wt == I32:
                typed.append(f32(val))
            elif fn == 10 and wt == 1:
                from onyx.proto.wire import f64

                typed.append(f64(val))
            else:
                t.unknown.append(_raw(ctx, start, wt, val))
                continue
            typed_field = fn
        elif fn == 6 and wt == LEN:
            if typed_field is not None and typed_field != 6:
                t.unknown.append(_raw(ctx, start, wt, val))
                continue
            typed.append(bytes(buf[val[0] : val[1]]))
            typed_field = 6
        elif fn == 8 and wt == LEN:
            t.name = text(buf, val)
        elif fn == 12 and wt == LEN:
            t.doc_string = text(buf, val)
        elif fn == 13 and wt == LEN:
            if ext_entries is None:
                ext_entries = []
            ext_entries.append(_entry(ctx, val))
        elif fn == 14 and wt == VARINT:
            t.data_location = to_int32(val)
        elif fn == 3 and wt == LEN:
            begin = end = None
            for f2, w2, v2, _ in iter_fields(buf, val[0], val[1]):
                if w2 == VARINT and f2 == 1:
                    begin = to_signed(v2)
                elif w2 == VARINT and f2 == 2:
                    end = to_signed(v2)
            t.segment = (begin, end)
        elif fn == 16 and wt == LEN:
            t.metadata_props.append(_entry(ctx, val))
        else:
            t.unknown.append(_raw(ctx, start, wt, val))
    t.dims = tuple(dims)
    if typed_field is not None:
        t.typed = typed
        t.typed_field = typed_field
    if ext_entries is not None:
        t.external = ExternalData.from_entries(ext_entries, None)
    t.explicit = frozenset(explicit)
    t._owner = ctx.owner
    if t.external is not None and t.data_location == 1 and ctx.external is not None:
        ctx.external(t)
    return t


def decode_sparse_tensor(ctx: Ctx, span: tuple[int, int]) -> SparseTensor:
    """SparseTensorProto."""
    values = indices = None
    dims: list[int] = []
    unknown = []
    for fn, wt, val, start in iter_fields(ctx.buf, span[0], span[1]):
        if fn == 1 and wt == LEN:
            values = decode_tensor(ctx, val)
        elif fn == 2 and wt == LEN:
            indices = decode_tensor(ctx, val)
        elif fn == 3 and _ints(ctx, wt, val, dims):
            pass
        else:
            unknown.append(_raw(ctx, start, wt, val))
    sp = SparseTensor(
        values if values is not None else Tensor(), indices if indices is not None else Tensor(), dims
    )
    sp.unknown = unknown
    sp.explicit = frozenset(k for k, v in (("values", values), ("indices", indices)) if v is None)
    return sp


# ---------------------------------------------------------------------------------------------
# Types


def decode_type(ctx: Ctx, span: tuple[int, int]) -> TypeBase:
    """TypeProto."""
    ctx.enter(span[0])
    buf = ctx.buf
    result: TypeBase | None = None
    denotation = None
    unknown = []
    for fn, wt, val, start in iter_fields(buf, span[0], span[1]):
        if wt != LEN:
            unknown.append(_raw(ctx, start, wt, val))
        elif fn in (1, 8):
            result = _tensor_type(ctx, val, SparseTensorType if fn == 8 else TensorType)
        elif fn == 4:
            result = SequenceType(None)
            result.elem, result.inner_unknown = _single_elem(ctx, val)
        elif fn == 9:
            result = OptionalType(None)
            result.elem, result.inner_unknown = _single_elem(ctx, val)
        elif fn == 5:
            result = _map_type(ctx, val)
        elif fn == 7:
            result = OpaqueType()
            for f2, w2, v2, s2 in iter_fields(buf, val[0], val[1]):
                if f2 == 1 and w2 == LEN:
                    result.domain = text(buf, v2)
                elif f2 == 2 and w2 == LEN:
                    result.name = text(buf, v2)
                else:
                    result.inner_unknown.append(_raw(ctx, s2, w2, v2))
        elif fn == 6:
            denotation = text(buf, val)
        else:
            unknown.append(_raw(ctx, start, wt, val))
    if result is None:
        result = UnknownType()
    result.denotation = denotation
    result.unknown = unknown
    ctx.leave()
    return result


def _single_elem(ctx: Ctx, span: tuple[int, int]) -> tuple[TypeBase | None, list[bytes]]:
    elem = None
    unknown = []
    for fn, wt, val, start in iter_fields(ctx.buf, span[0], span[1]):
        if fn == 1 and wt == LEN:
            elem = decode_type(ctx, val)
        else:
            unknown.append(_raw(ctx, start, wt, val))
    return elem, unknown


def _map_type(ctx: Ctx, span: tuple[int, int]) -> MapType:
    m = MapType()
    for fn, wt, val, start in iter_fields(ctx.buf, span[0], span[1]):
        if fn == 1 and wt == VARINT:
            m.key_type = to_int32(val)
        elif fn == 2 and wt == LEN:
            m.value = decode_type(ctx, val)
        else:
            m.inner_unknown.append(_raw(ctx, start, wt, val))
    return m


def _tensor_type(ctx: Ctx, span: tuple[int, int], cls: type) -> TensorType:
    t = cls()
    for fn, wt, val, start in iter_fields(ctx.buf, span[0], span[1]):
        if fn == 1 and wt == VARINT:
            t.elem_type = to_int32(val)
        elif fn == 2 and wt == LEN:
            t.shape = decode_shape(ctx, val)
        else:
            t.inner_unknown.append(_raw(ctx, start, wt, val))
    return t


def decode_shape(ctx: Ctx, span: tuple[int, int]) -> Shape:
    """TensorShapeProto."""
    buf = ctx.buf
    shape = Shape()
    dims = shape.dims
    dens: list[str | None] = []
    dim_unknown: list[list[bytes]] = []
    any_den = any_unknown = False
    for fn, wt, val, start in iter_fields(buf, span[0], span[1]):
        if fn != 1 or wt != LEN:
            shape.unknown.append(_raw(ctx, start, wt, val))
            continue
        d: int | str | None = None
        den = None
        unk: list[bytes] = []
        for f2, w2, v2, s2 in iter_fields(buf, val[0], val[1]):
            if f2 == 1 and w2 == VARINT:
                d = to_signed(v2)
            elif f2 == 2 and w2 == LEN:
                d = text(buf, v2)
            elif f2 == 3 and w2 == LEN:
                den = text(buf, v2)
                any_den = True
            else:
                unk.append(_raw(ctx, s2, w2, v2))
                any_unknown = True
        dims.append(d)
        dens.append(den)
        dim_unknown.append(unk)
    if any_den:
        shape.denotations = dens
    if any_unknown:
        shape.dim_unknown = dim_unknown
    return shape


# ---------------------------------------------------------------------------------------------
# Attributes and nodes

_SINGLE_FIELDS = {
    2: AttrType.FLOAT,
    3: AttrType.INT,
    4: AttrType.STRING,
    5: AttrType.TENSOR,
    6: AttrType.GRAPH,
    22: AttrType.SPARSE_TENSOR,
    14: AttrType.TYPE_PROTO,
}
_LIST_FIELDS = {
    7: AttrType.FLOATS,
    8: AttrType.INTS,
    9: AttrType.STRINGS,
    10: AttrType.TENSORS,
    11: AttrType.GRAPHS,
    23: AttrType.SPARSE_TENSORS,
    15: AttrType.TYPE_PROTOS,
}
_FIELD_OF_TYPE = {v: k for k, v in {**_SINGLE_FIELDS, **_LIST_FIELDS}.items()}


class _PendingAttr:
    """An attribute decoded except for its subgraphs (which need the enclosing scope)."""

    __slots__ = ("attr", "graph_spans")

    def __init__(self, attr: Attr, graph_spans: list[tuple[int, int]]):
        self.attr = attr
        self.graph_spans = graph_spans


#: one-byte keys of AttributeProto's repeated floats (7, I32) and ints (8, VARINT)
_BULK_KEYS = {(7 << 3) | I32: 7, (8 << 3) | VARINT: 8}
_BULK = -1  # the "wire type" of a run decoded in bulk: val is (values, stop)
_STRINGS_KEY = (9 << 3) | LEN  # AttributeProto.strings


def _strings_run(buf: Any, pos: int, end: int) -> tuple[list[bytes], int]:
    """The run of strings fields with one-byte lengths from ``pos`` (a tree ensemble's node modes are
    tens of thousands of them), read in a tight loop; stops where the field-by-field parser is needed."""
    out = []
    while pos + 1 < end and buf[pos] == _STRINGS_KEY:
        n = buf[pos + 1]
        if n >= 0x80 or pos + 2 + n > end:
            break
        out.append(bytes(buf[pos + 2 : pos + 2 + n]))
        pos += 2 + n
    return out, pos


def _attribute_fields(ctx: Ctx, pos: int, end: int, fields: dict, unknown: list, meta: list) -> int | None:
    """Read AttributeProto fields from ``pos``; a long run of unpacked floats/ints is decoded in one
    vectorised step (wire.unpacked_run), after which the caller resumes at the returned offset (None
    when the message is done)."""
    buf = ctx.buf
    for fn, wt, val, start in iter_fields(buf, pos, end):
        if buf[start] == _STRINGS_KEY:
            strings, stop = _strings_run(buf, start, end)
            if len(strings) > 1:
                fields.setdefault(9, []).append((_BULK, (strings, stop), start))
                return stop if stop < end else None
        bulk_fn = _BULK_KEYS.get(buf[start])
        if bulk_fn is not None:
            run = unpacked_run(buf, start, end, buf[start])
            if run is not None:
                fields.setdefault(bulk_fn, []).append((_BULK, run, start))
                return run[1] if run[1] < end else None
        if fn == 1 and wt == LEN:
            meta[0] = text(buf, val)
        elif fn == 20 and wt == VARINT:
            meta[1] = to_int32(val)
        elif fn == 21 and wt == LEN:
            meta[2] = text(buf, val)
        elif fn == 13 and wt == LEN:
            meta[3] = text(buf, val)
        elif fn in _SINGLE_FIELDS or fn in _LIST_FIELDS:
            fields.setdefault(fn, []).append((wt, val, start))
        else:
            unknown.append(_raw(ctx, start, wt, val))
    return None


def decode_attribute(ctx: Ctx, span: tuple[int, int]) -> _PendingAttr:
    """AttributeProto. GRAPH values are left as spans for the caller to decode in scope."""
    buf = ctx.buf
    meta: list[Any] = ["", None, None, None]  # name, type code, ref_attr_name, doc_string
    pos: int | None
    fields: dict[int, list[tuple[int, Any, int]]] = {}
    unknown = []
    explicit: dict[str, Any] = {}
    pos = span[0]
    while pos is not None:
        pos = _attribute_fields(ctx, pos, span[1], fields, unknown, meta)
    name, type_code, ref, doc = meta
    if type_code is None:
        explicit["type_absent"] = True
        # infer the kind from the field that is set, as old (IR < 3) models need
        kinds = [_SINGLE_FIELDS.get(f) or _LIST_FIELDS.get(f) for f in fields]
        type_code = int(kinds[0]) if len(kinds) >= 1 else 0
    attr = Attr(name, type_code, None, ref)
    attr.doc_string = doc
    value_field = _FIELD_OF_TYPE.get(type_code)
    graph_spans: list[tuple[int, int]] = []
    for fn, items in fields.items():
        if fn != value_field:
            unknown.extend(_raw_item(ctx, start, wt, val) for wt, val, start in items)
    items = fields.get(value_field, []) if value_field is not None else []
    t = attr.type
    if value_field in _SINGLE_FIELDS:
        # a singular field: the last occurrence wins (message fields would merge; ONNX writers never repeat)
        good = [it for it in items if _wire_ok(t, it[0])]
        unknown.extend(_raw(ctx, start, wt, val) for wt, val, start in items if not _wire_ok(t, wt))
        if not good:
            explicit["no_value"] = True
            attr.value = _default_single(t)
        else:
            wt, val, start = good[-1]
            if len(good) > 1:
                unknown.extend(_raw(ctx, s, w, v) for w, v, s in good[:-1])
            attr.value = _single_value(ctx, t, wt, val, graph_spans)
    elif value_field in _LIST_FIELDS:
        values: list[Any] = []
        for wt, val, start in items:
            if wt == _BULK:
                if t == AttrType.STRINGS and value_field == 9:
                    values.extend(val[0])
                elif t == AttrType.FLOATS and value_field == 7:
                    values.extend(val[0].view("<f4").tolist())
                elif t == AttrType.INTS and value_field == 8:
                    values.extend(val[0].view("int64").tolist())
                else:
                    unknown.append(_raw_item(ctx, start, wt, val))
                continue
            if t == AttrType.FLOATS and _floats(ctx, wt, val, values):
                continue
            if t == AttrType.INTS and _ints(ctx, wt, val, values):
                continue
            if wt == LEN and t not in (AttrType.FLOATS, AttrType.INTS):
                if t == AttrType.STRINGS:
                    values.append(bytes(buf[val[0] : val[1]]))
                elif t == AttrType.TENSORS:
                    values.append(decode_tensor(ctx, val))
                elif t == AttrType.SPARSE_TENSORS:
                    values.append(decode_sparse_tensor(ctx, val))
                elif t == AttrType.TYPE_PROTOS:
                    values.append(decode_type(ctx, val))
                elif t == AttrType.GRAPHS:
                    graph_spans.append(val)
                continue
            unknown.append(_raw(ctx, start, wt, val))
        attr.value = values
    attr.unknown = unknown
    attr.explicit = explicit
    return _PendingAttr(attr, graph_spans)


def _raw_item(ctx: Ctx, start: int, wt: int, val: Any) -> bytes:
    """_raw, also for a run decoded in bulk (its bytes verbatim)."""
    if wt == _BULK:
        return bytes(ctx.buf[start : val[1]])
    return _raw(ctx, start, wt, val)


def _wire_ok(t: AttrType, wt: int) -> bool:
    if t == AttrType.FLOAT:
        return wt == I32
    if t == AttrType.INT:
        return wt == VARINT
    return wt == LEN


def _default_single(t: AttrType) -> Any:
    return {AttrType.FLOAT: 0.0, AttrType.INT: 0, AttrType.STRING: b""}.get(t)


def _single_value(ctx: Ctx, t: AttrType, wt: int, val: Any, graph_spans: list) -> Any:
    if t == AttrType.FLOAT:
        return f32(val)
    if t == AttrType.INT:
        return to_signed(val)
    if t == AttrType.STRING:
        return bytes(ctx.buf[val[0] : val[1]])
    if t == AttrType.TENSOR:
        return decode_tensor(ctx, val)
    if t == AttrType.SPARSE_TENSOR:
        return decode_sparse_tensor(ctx, val)
    if t == AttrType.TYPE_PROTO:
        return decode_type(ctx, val)
    if t == AttrType.GRAPH:
        graph_spans.append(val)
        return None
    return None


class _PendingNode:
    __slots__ = ("node", "input_names", "attrs")

    def __init__(self, node: Node, input_names: list[str], attrs: list[_PendingAttr]):
        self.node = node
        self.input_names = input_names
        self.attrs = attrs


def _decode_node_fields(ctx: Ctx, span: tuple[int, int]) -> tuple[_PendingNode, list[str]]:
    """NodeProto, except that inputs stay names and subgraphs stay spans."""
    buf = ctx.buf
    node = Node("")
    input_names: list[str] = []
    output_names: list[str] = []
    attrs: list[_PendingAttr] = []
    explicit = set()
    op_type_seen = domain_seen = False
    for fn, wt, val, start in iter_fields(buf, span[0], span[1]):
        if wt != LEN:
            node.unknown.append(_raw(ctx, start, wt, val))
        elif fn == 1:
            input_names.append(text(buf, val))
        elif fn == 2:
            output_names.append(text(buf, val))
        elif fn == 3:
            node.name = text(buf, val)
        elif fn == 4:
            node.op_type = text(buf, val)
            op_type_seen = True
        elif fn == 7:
            node.domain = text(buf, val)
            domain_seen = True
        elif fn == 8:
            node.overload = text(buf, val)
        elif fn == 5:
            attrs.append(decode_attribute(ctx, val))
        elif fn == 6:
            node.doc_string = text(buf, val)
        elif fn == 9:
            node.metadata_props.append(_entry(ctx, val))
        else:
            node.unknown.append(_raw(ctx, start, wt, val))
    if op_type_seen and node.op_type == "":
        explicit.add("op_type")
    if domain_seen and node.domain == "":
        explicit.add("domain")
    node.explicit = frozenset(explicit)
    return _PendingNode(node, input_names, attrs), output_names


# ---------------------------------------------------------------------------------------------
# Graphs


class Scope:
    """Name resolution: this graph's values, then the enclosing graphs'."""

    __slots__ = ("local", "outer")

    def __init__(self, outer: Scope | None = None):
        self.local: dict[str, Value] = {}
        self.outer = outer

    def get(self, name: str) -> Value | None:
        s: Scope | None = self
        while s is not None:
            v = s.local.get(name)
            if v is not None:
                return v
            s = s.outer
        return None


def _value_info(
    ctx: Ctx, span: tuple[int, int]
) -> tuple[str, TypeBase | None, str | None, list, list[bytes]]:
    buf = ctx.buf
    name = ""
    typ = None
    doc = None
    meta: list[tuple[str, str]] = []
    unknown = []
    for fn, wt, val, start in iter_fields(buf, span[0], span[1]):
        if fn == 1 and wt == LEN:
            name = text(buf, val)
        elif fn == 2 and wt == LEN:
            typ = decode_type(ctx, val)
        elif fn == 3 and wt == LEN:
            doc = text(buf, val)
        elif fn == 4 and wt == LEN:
            meta.append(_entry(ctx, val))
        else:
            unknown.append(_raw(ctx, start, wt, val))
    return name, typ, doc, meta, unknown


def _apply_info(g: Graph, kind: str, idx: int, v: Value, info, fresh: bool) -> None:
    _, typ, doc, meta, unknown = info
    if fresh:
        v.type, v.doc_string, v.metadata_props, v.unknown = typ, doc, meta, unknown
        return
    if v.type is None and v.doc_string is None and not v.metadata_props and not v.unknown:
        # the first ValueInfo seen for a node output or an initializer of this graph
        local = (v.producer is not None and v.producer.graph is g) or (
            v.producer is None and v.const is not None and g.initializers.get(v.name) is v
        )
        if local:
            v.type, v.doc_string, v.metadata_props, v.unknown = typ, doc, meta, unknown
            return
    same = _type_bytes(v.type) == _type_bytes(typ) and v.doc_string == doc and v.metadata_props == meta
    if not (same and v.unknown == unknown):
        g.overrides[(kind, id(v))] = ValueInfoOverride(typ, doc, meta, unknown, v)


def _type_bytes(t: TypeBase | None) -> bytes | None:
    if t is None:
        return None
    from onyx.proto.encode import encode_type

    return encode_type(t).getvalue()


def decode_graph(ctx: Ctx, span: tuple[int, int], outer: Scope | None) -> Graph:
    """GraphProto, resolving names against ``outer`` for subgraphs."""
    ctx.enter(span[0])
    buf = ctx.buf
    g = Graph()
    scope = Scope(outer)
    local = scope.local
    node_spans: list[tuple[int, int]] = []
    input_spans, output_spans, vi_spans = [], [], []
    init_spans, sparse_spans = [], []
    explicit = set()
    for fn, wt, val, start in iter_fields(buf, span[0], span[1]):
        if wt != LEN:
            g.unknown.append(_raw(ctx, start, wt, val))
        elif fn == 1:
            node_spans.append(val)
        elif fn == 2:
            g.name = text(buf, val)
        elif fn == 5:
            init_spans.append(val)
        elif fn == 15:
            sparse_spans.append(val)
        elif fn == 10:
            g.doc_string = text(buf, val)
        elif fn == 11:
            input_spans.append(val)
        elif fn == 12:
            output_spans.append(val)
        elif fn == 13:
            vi_spans.append(val)
        elif fn == 14:
            g.quantization_annotation.append(bytes(buf[val[0] : val[1]]))
        elif fn == 16:
            g.metadata_props.append(_entry(ctx, val))
        else:
            g.unknown.append(_raw(ctx, start, wt, val))
    g.explicit = frozenset(explicit)

    for i, sp in enumerate(input_spans):
        info = _value_info(ctx, sp)
        name = info[0]
        if name in local:
            g.load_issues.append(f"graph input {name!r} is declared twice")
            v = local[name]
            _apply_info(g, "input", i, v, info, fresh=False)
        else:
            v = Value(name)
            _apply_info(g, "input", i, v, info, fresh=True)
            local[name] = v
        g.inputs.append(v)

    for sp in init_spans:
        t = decode_tensor(ctx, sp)
        _add_initializer(g, local, t.name or "", t)
    for sp in sparse_spans:
        st = decode_sparse_tensor(ctx, sp)
        _add_initializer(g, local, st.name or "", st)

    pending: list[_PendingNode] = []
    for sp in node_spans:
        pn, out_names = _decode_node_fields(ctx, sp)
        node = pn.node
        for oname in out_names:
            v = Value(oname)
            node.append_output(v)
            if oname:
                if oname in local or (outer is not None and outer.get(oname) is not None):
                    g.load_issues.append(f"value {oname!r} is assigned more than once ({node.describe()})")
                if oname not in local or local[oname].producer is None:
                    local[oname] = v
        g.append_node(node)
        pending.append(pn)

    for pn in pending:
        node = pn.node
        for name in pn.input_names:
            if not name:
                node.append_input(None)
                continue
            v = local.get(name)
            if v is None:
                v = outer.get(name) if outer is not None else None
                if v is not None:
                    g.outer_refs.add(name)
                else:
                    g.load_issues.append(f"{node.describe()} reads {name!r}, which nothing defines")
                    v = Value(name)
                    local[name] = v
            node.append_input(v)
        for pa in pn.attrs:
            a = pa.attr
            if pa.graph_spans:
                graphs = [decode_graph(ctx, s, scope) for s in pa.graph_spans]
                for sub in graphs:
                    sub.parent = node
                a.value = graphs if a.type == AttrType.GRAPHS else graphs[-1]
            if a.name in node.attributes:
                g.load_issues.append(f"{node.describe()} has attribute {a.name!r} twice")
                node.attributes[a.name + "\x00dup" + str(len(node.attributes))] = a
            else:
                node.attributes[a.name] = a

    for i, sp in enumerate(output_spans):
        info = _value_info(ctx, sp)
        v = _resolve(g, scope, info[0], "graph output")
        _apply_info(g, "output", i, v, info, fresh=False)
        g.outputs.append(v)
    for i, sp in enumerate(vi_spans):
        info = _value_info(ctx, sp)
        v = _resolve(g, scope, info[0], "value_info")
        _apply_info(g, "value_info", i, v, info, fresh=False)
        g.value_info.append(v)
    ctx.leave()
    return g


def _resolve(g: Graph, scope: Scope, name: str, what: str) -> Value:
    v = scope.get(name)
    if v is None:
        if what != "value_info":  # a stale value_info entry is harmless; onnxruntime writes some
            g.load_issues.append(f"{what} {name!r} is not defined in the graph")
        v = Value(name)
        scope.local[name] = v
    elif name not in scope.local:
        g.outer_refs.add(name)
    return v


def _add_initializer(g: Graph, local: dict[str, Value], name: str, data: Tensor | SparseTensor) -> None:
    v = local.get(name)
    if v is not None and v.const is None and v in g.inputs:
        v.const = data
    else:
        if v is not None:
            g.load_issues.append(f"initializer {name!r} is defined twice")
        v = Value(name, const=data)
        local[name] = v
    if name in g.initializers:
        g.initializers[name + "\x00dup" + str(len(g.initializers))] = v
    else:
        g.initializers[name] = v


# ---------------------------------------------------------------------------------------------
# Functions, training info, models


def decode_function(ctx: Ctx, span: tuple[int, int]) -> Function:
    """FunctionProto: the body is held as a Graph whose inputs/outputs are the function's."""
    ctx.enter(span[0])
    buf = ctx.buf
    f = Function("", "")
    inputs: list[str] = []
    outputs: list[str] = []
    node_spans = []
    vi_spans = []
    explicit = set()
    for fn, wt, val, start in iter_fields(buf, span[0], span[1]):
        if wt != LEN:
            f.unknown.append(_raw(ctx, start, wt, val))
        elif fn == 1:
            f.name = text(buf, val)
            if not f.name:
                explicit.add("name")
        elif fn == 4:
            inputs.append(text(buf, val))
        elif fn == 5:
            outputs.append(text(buf, val))
        elif fn == 6:
            f.attributes.append(text(buf, val))
        elif fn == 11:
            f.attribute_protos.append(decode_attribute(ctx, val).attr)
        elif fn == 7:
            node_spans.append(val)
        elif fn == 8:
            f.doc_string = text(buf, val)
        elif fn == 9:
            f.opset_imports.append(_opset(ctx, val))
        elif fn == 10:
            f.domain = text(buf, val)
            if not f.domain:
                explicit.add("domain")
        elif fn == 13:
            f.overload = text(buf, val)
        elif fn == 12:
            vi_spans.append(val)
        elif fn == 14:
            f.metadata_props.append(_entry(ctx, val))
        else:
            f.unknown.append(_raw(ctx, start, wt, val))
    f.explicit = frozenset(explicit)
    body = f.graph
    scope = Scope(None)
    for name in inputs:
        v = Value(name)
        f.inputs.append(v)
        if name:
            scope.local[name] = v
    # nodes, resolved like a graph's
    pending = []
    for sp in node_spans:
        pn, out_names = _decode_node_fields(ctx, sp)
        for oname in out_names:
            v = Value(oname)
            pn.node.append_output(v)
            if oname and (oname not in scope.local or scope.local[oname].producer is None):
                scope.local[oname] = v
        body.append_node(pn.node)
        pending.append(pn)
    for pn in pending:
        node = pn.node
        for name in pn.input_names:
            if not name:
                node.append_input(None)
                continue
            v = scope.local.get(name)
            if v is None:
                body.load_issues.append(
                    f"{node.describe()} reads {name!r}, which nothing in the function defines"
                )
                v = Value(name)
                scope.local[name] = v
            node.append_input(v)
        for pa in pn.attrs:
            a = pa.attr
            if pa.graph_spans:
                graphs = [decode_graph(ctx, s, scope) for s in pa.graph_spans]
                for sub in graphs:
                    sub.parent = node
                a.value = graphs if a.type == AttrType.GRAPHS else graphs[-1]
            node.attributes[a.name if a.name not in node.attributes else a.name + "\x00dup"] = a
    for name in outputs:
        v = scope.get(name) if name else None
        if v is None:
            v = Value(name)
            if name:
                body.load_issues.append(f"function output {name!r} is not defined")
        f.outputs.append(v)
    for i, sp in enumerate(vi_spans):
        info = _value_info(ctx, sp)
        v = scope.get(info[0])
        if v is None:
            v = Value(info[0])
        _apply_info(body, "value_info", i, v, info, fresh=v.type is None and v.doc_string is None)
        body.value_info.append(v)
    ctx.leave()
    return f


def decode_training_info(ctx: Ctx, span: tuple[int, int], scope: Scope) -> TrainingInfo:
    """TrainingInfoProto; its graphs read the main graph's initializers."""
    ti = TrainingInfo()
    for fn, wt, val, start in iter_fields(ctx.buf, span[0], span[1]):
        if fn == 1 and wt == LEN:
            ti.initialization = decode_graph(ctx, val, scope)
        elif fn == 2 and wt == LEN:
            ti.algorithm = decode_graph(ctx, val, scope)
        elif fn == 3 and wt == LEN:
            ti.initialization_binding.append(_entry(ctx, val))
        elif fn == 4 and wt == LEN:
            ti.update_binding.append(_entry(ctx, val))
        else:
            ti.unknown.append(_raw(ctx, start, wt, val))
    return ti


def decode_model(ctx: Ctx) -> Model:
    """ModelProto over the whole buffer."""
    buf = ctx.buf
    end = len(buf)
    m = Model()
    m.ir_version = None
    m.opset_imports = []
    graph_span = None
    fn_spans = []
    ti_spans = []
    explicit = set()
    for fn, wt, val, start in iter_fields(buf, 0, end):
        if fn == 1 and wt == VARINT:
            m.ir_version = to_signed(val)
        elif fn == 5 and wt == VARINT:
            m.model_version = to_signed(val)
        elif wt != LEN:
            m.unknown.append(_raw(ctx, start, wt, val))
        elif fn == 8:
            m.opset_imports.append(_opset(ctx, val))
        elif fn == 2:
            m.producer_name = text(buf, val)
        elif fn == 3:
            m.producer_version = text(buf, val)
        elif fn == 4:
            m.domain = text(buf, val)
        elif fn == 6:
            m.doc_string = text(buf, val)
        elif fn == 7:
            graph_span = val
        elif fn == 14:
            m.metadata_props.append(_entry(ctx, val))
        elif fn == 20:
            ti_spans.append(val)
        elif fn == 25:
            fn_spans.append(val)
        elif fn == 26:
            m.configuration.append(bytes(buf[val[0] : val[1]]))
        else:
            m.unknown.append(_raw(ctx, start, wt, val))
    m.explicit = frozenset(explicit)
    if graph_span is not None:
        m.graph = decode_graph(ctx, graph_span, None)
    else:
        m.graph = None  # type: ignore[assignment]
    main_scope = Scope(None)
    if m.graph is not None:
        main_scope.local.update(m.graph.values())
    m.functions = [decode_function(ctx, sp) for sp in fn_spans]
    m.training_info = [decode_training_info(ctx, sp, main_scope) for sp in ti_spans]
    return m
