"""The messages of ``inference.GRPCInferenceService`` (the Open Inference Protocol's gRPC form), read and
written with onyx's own protobuf wire codec: no protobuf package, no generated code.

Field numbers follow the protocol's published definition (grpc_predict_v2.proto, as Triton extends it
with the repository and configuration messages). Decoders check every length against its message
(the wire reader does) and every element count against the bytes that carry it before allocating.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from onyx.errors import InvalidProtobuf
from onyx.proto import wire
from onyx.proto.wire import I32, I64, LEN, VARINT, Writer
from onyx.serve import datatypes
from onyx.serve.config_pbtxt import ModelConfig
from onyx.serve.errors import BadRequest
from onyx.serve.model import InferInput, InferRequest, InferResponse, RequestedOutput

# ---------------------------------------------------------------------------------------------
# reading


def _fields(buf: Any):
    try:
        yield from wire.iter_fields(buf, 0, len(buf))
    except InvalidProtobuf as e:
        raise BadRequest(f"malformed protobuf message: {e}") from None


def _text(buf: Any, span: tuple[int, int]) -> str:
    return wire.text(buf, span)


def _sub(buf: Any, span: tuple[int, int]) -> memoryview:
    return memoryview(buf)[span[0] : span[1]]


def decode_name_version(buf: Any) -> tuple[str, str]:
    """ModelReadyRequest / ModelMetadataRequest / ModelConfigRequest / ModelStatisticsRequest:
    name = 1, version = 2."""
    name = version = ""
    for fn, wt, v, _ in _fields(buf):
        if fn == 1 and wt == LEN:
            name = _text(buf, v)
        elif fn == 2 and wt == LEN:
            version = _text(buf, v)
    return name, version


def decode_repository_index(buf: Any) -> bool:
    """RepositoryIndexRequest: repository_name = 1, ready = 2; returns ``ready``."""
    ready = False
    for fn, wt, v, _ in _fields(buf):
        if fn == 2 and wt == VARINT:
            ready = bool(v)
    return ready


def decode_repository_model(buf: Any) -> tuple[str, bool]:
    """RepositoryModelLoadRequest / UnloadRequest: model_name = 2, parameters = 3 (map entries)."""
    name, has_params = "", False
    for fn, wt, v, _ in _fields(buf):
        if fn == 2 and wt == LEN:
            name = _text(buf, v)
        elif fn == 3:
            has_params = True
    return name, has_params


def _parameter(buf: Any) -> Any:
    """InferParameter: bool 1, int64 2, string 3, double 4, uint64 5 (a oneof)."""
    value: Any = None
    for fn, wt, v, _ in _fields(buf):
        if fn == 1 and wt == VARINT:
            value = bool(v)
        elif fn == 2 and wt == VARINT:
            value = wire.to_signed(v)
        elif fn == 3 and wt == LEN:
            value = _text(buf, v)
        elif fn == 4 and wt == I64:
            value = wire.f64(v)
        elif fn == 5 and wt == VARINT:
            value = v
    return value


def _map_entry(buf: Any) -> tuple[str, Any]:
    key, value = "", None
    for fn, wt, v, _ in _fields(buf):
        if fn == 1 and wt == LEN:
            key = _text(buf, v)
        elif fn == 2 and wt == LEN:
            value = _parameter(_sub(buf, v))
    return key, value


def _int64s(buf: Any, wt: int, v: Any, out: list[int]) -> None:
    if wt == LEN:
        out.extend(int(x) for x in wire.packed_varints(buf, v).view(np.int64))
    elif wt == VARINT:
        out.append(wire.to_signed(v))


@dataclass
class _Tensor:
    name: str = ""
    datatype: str = ""
    shape: tuple[int, ...] = ()
    contents: memoryview | None = None


def _input_tensor(buf: Any) -> _Tensor:
    """InferInputTensor: name 1, datatype 2, shape 3, parameters 4, contents 5."""
    t = _Tensor()
    shape: list[int] = []
    for fn, wt, v, _ in _fields(buf):
        if fn == 1 and wt == LEN:
            t.name = _text(buf, v)
        elif fn == 2 and wt == LEN:
            t.datatype = _text(buf, v)
        elif fn == 3:
            _int64s(buf, wt, v, shape)
        elif fn == 5 and wt == LEN:
            t.contents = _sub(buf, v)
    t.shape = datatypes.check_shape(shape, f"input {t.name!r}")
    return t


def _requested_output(buf: Any) -> RequestedOutput:
    """InferRequestedOutputTensor: name 1, parameters 2."""
    name = ""
    for fn, wt, v, _ in _fields(buf):
        if fn == 1 and wt == LEN:
            name = _text(buf, v)
        elif fn == 2 and wt == LEN:
            key, _value = _map_entry(_sub(buf, v))
            if key == "classification":
                raise BadRequest("the classification extension is not supported")
    return RequestedOutput(name)


#: InferTensorContents field per datatype: (field number, wire kind)
_CONTENTS_FIELD = {
    "BOOL": 1,
    "INT8": 2,
    "INT16": 2,
    "INT32": 2,
    "INT64": 3,
    "UINT8": 4,
    "UINT16": 4,
    "UINT32": 4,
    "UINT64": 5,
    "FP32": 6,
    "FP64": 7,
    "BYTES": 8,
}


def _contents(buf: Any, datatype: str, shape: tuple[int, ...], where: str) -> np.ndarray:
    """The typed repeated field of InferTensorContents that a datatype uses, as an array of ``shape``."""
    field_no = _CONTENTS_FIELD.get(datatype)
    if field_no is None:
        raise BadRequest(f"{where}: {datatype} data can only be sent in raw_input_contents")
    n = datatypes.element_count(shape)
    if datatype == "BYTES":
        items = [bytes(_sub(buf, v)) for fn, wt, v, _ in _fields(buf) if fn == 8 and wt == LEN]
        if len(items) != n:
            raise BadRequest(
                f"{where}: {len(items)} bytes_contents given for shape {list(shape)} ({n} elements)"
            )
        out = np.empty(n, dtype=object)
        out[:] = items
        return out.reshape(shape)
    parts: list[np.ndarray] = []
    fixed = {6: ("<f4", I32), 7: ("<f8", I64)}.get(field_no)
    for fn, wt, v, _ in _fields(buf):
        if fn != field_no:
            continue
        if fixed is not None:
            if wt == LEN:
                if (v[1] - v[0]) % np.dtype(fixed[0]).itemsize:
                    raise BadRequest(f"{where}: packed {datatype} contents are not a whole number of values")
                parts.append(np.frombuffer(buf, fixed[0], (v[1] - v[0]) // np.dtype(fixed[0]).itemsize, v[0]))
            elif wt == fixed[1]:
                parts.append(np.frombuffer(v, fixed[0]))
        elif wt == LEN:
            try:
                parts.append(wire.packed_varints(buf, v))
            except InvalidProtobuf as e:
                raise BadRequest(f"{where}: {e}") from None
        elif wt == VARINT:
            parts.append(np.array([v], dtype=np.uint64))
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
    if values.size != n:
        raise BadRequest(f"{where}: {values.size} values given for shape {list(shape)} ({n} elements)")
    dt = datatypes.NUMPY[datatype]
    if fixed is not None:
        return values.astype(dt).reshape(shape)
    if datatype == "BOOL":
        return (values != 0).reshape(shape)
    if field_no == 2:  # int32 on the wire (negative values sign-extended to 64 bits)
        values = (values & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    elif field_no == 3:
        values = values.view(np.int64)
    elif field_no == 4:
        values = (values & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    info = np.iinfo(dt)
    if values.size and (values.min() < info.min or values.max() > info.max):
        raise BadRequest(f"{where}: a value is out of range for {datatype}")
    return values.astype(dt).reshape(shape)


def decode_model_infer(buf: Any) -> tuple[str, str, InferRequest]:
    """ModelInferRequest: model_name 1, model_version 2, id 3, parameters 4, inputs 5, outputs 6,
    raw_input_contents 7. Returns (model name, version, request)."""
    name = version = request_id = ""
    params: dict[str, Any] = {}
    tensors: list[_Tensor] = []
    outputs: list[RequestedOutput] = []
    raw: list[memoryview] = []
    for fn, wt, v, _ in _fields(buf):
        if wt != LEN:
            continue
        if fn == 1:
            name = _text(buf, v)
        elif fn == 2:
            version = _text(buf, v)
        elif fn == 3:
            request_id = _text(buf, v)
        elif fn == 4:
            key, value = _map_entry(_sub(buf, v))
            params[key] = value
        elif fn == 5:
            tensors.append(_input_tensor(_sub(buf, v)))
        elif fn == 6:
            outputs.append(_requested_output(_sub(buf, v)))
        elif fn == 7:
            raw.append(_sub(buf, v))
    if not tensors:
        raise BadRequest("the request has no inputs")
    if raw and len(raw) != len(tensors):
        raise BadRequest(
            f"raw_input_contents has {len(raw)} entries for {len(tensors)} inputs; "
            "when used it must hold every input"
        )
    inputs = []
    for i, t in enumerate(tensors):
        where = f"input {t.name!r}"
        datatype = datatypes.check_datatype(t.datatype, where)
        if raw:
            if t.contents is not None and len(t.contents):
                raise BadRequest(f"{where} has both contents and raw_input_contents")
            array = datatypes.from_raw(raw[i], datatype, t.shape, where)
        else:
            array = _contents(t.contents if t.contents is not None else b"", datatype, t.shape, where)
        inputs.append(InferInput(t.name, datatype, t.shape, array))
    if "classification" in params:
        raise BadRequest("the classification extension is not supported")
    return name, version, InferRequest(inputs, outputs or None, request_id, params)


# ---------------------------------------------------------------------------------------------
# writing


def encode_bool(value: bool) -> bytes:
    """ServerLiveResponse / ServerReadyResponse / ModelReadyResponse: field 1."""
    w = Writer()
    if value:
        w.uint(1, 1)
    return w.getvalue()


def encode_server_metadata(meta: dict[str, Any]) -> bytes:
    w = Writer()
    w.string(1, meta["name"])
    w.string(2, meta["version"])
    for ext in meta["extensions"]:
        w.string(3, ext)
    return w.getvalue()


def _tensor_metadata(t: dict[str, Any]) -> Writer:
    w = Writer()
    w.string(1, t["name"])
    w.string(2, t["datatype"])
    w.packed_ints(3, t["shape"])
    return w


def encode_model_metadata(meta: dict[str, Any]) -> bytes:
    w = Writer()
    w.string(1, meta["name"])
    for v in meta["versions"]:
        w.string(2, v)
    w.string(3, meta["platform"])
    for t in meta["inputs"]:
        w.message(4, _tensor_metadata(t))
    for t in meta["outputs"]:
        w.message(5, _tensor_metadata(t))
    return w.getvalue()


def encode_model_infer(resp: InferResponse) -> bytes:
    """ModelInferResponse with every output in raw_output_contents (as Triton answers)."""
    w = Writer()
    w.string(1, resp.model_name)
    w.string(2, resp.model_version)
    if resp.id:
        w.string(3, resp.id)
    raws = []
    for o in resp.outputs:
        t = Writer()
        t.string(1, o.name)
        t.string(2, o.datatype)
        if o.array.ndim:
            t.packed_ints(3, list(o.array.shape))
        w.message(5, t)
        raws.append(datatypes.to_raw(o.array, o.datatype))
    for raw in raws:
        w.bytes_(6, raw)
    return w.getvalue()


def encode_stream_response(infer_response: bytes | None, error: str = "") -> bytes:
    """ModelStreamInferResponse: error_message 1, infer_response 2."""
    w = Writer()
    if error:
        w.string(1, error)
    if infer_response is not None:
        w.bytes_(2, infer_response)
    return w.getvalue()


def encode_repository_index(entries: list[dict[str, str]]) -> bytes:
    w = Writer()
    for e in entries:
        m = Writer()
        m.string(1, e["name"])
        if e.get("version"):
            m.string(2, e["version"])
        m.string(3, e.get("state", ""))
        if e.get("reason"):
            m.string(4, e["reason"])
        w.message(1, m)
    return w.getvalue()


_KIND = {"KIND_AUTO": 0, "KIND_GPU": 1, "KIND_CPU": 2, "KIND_MODEL": 3}
_DATA_TYPE = {
    "BOOL": 1,
    "UINT8": 2,
    "UINT16": 3,
    "UINT32": 4,
    "UINT64": 5,
    "INT8": 6,
    "INT16": 7,
    "INT32": 8,
    "INT64": 9,
    "FP16": 10,
    "FP32": 11,
    "FP64": 12,
    "BYTES": 13,
    "BF16": 14,
}


def encode_model_config(cfg: ModelConfig) -> bytes:
    """ModelConfigResponse { config = 1: ModelConfig } with the fields onyx reads from config.pbtxt."""
    c = Writer()
    c.string(1, cfg.name)
    c.string(2, cfg.platform)
    vp, sub = Writer(), Writer()
    policy = cfg.version_policy
    if policy.kind == "all":
        vp.message(2, sub)
    elif policy.kind == "specific":
        sub.packed_ints(1, policy.versions)
        vp.message(3, sub)
    else:
        sub.uint(1, policy.num_versions)
        vp.message(1, sub)
    c.message(3, vp)
    c.uint(4, cfg.max_batch_size)
    for field_no, tensors in ((5, cfg.inputs), (6, cfg.outputs)):
        for t in tensors:
            m = Writer()
            m.string(1, t.name)
            m.uint(2, _DATA_TYPE[t.datatype])
            m.packed_ints(4 if field_no == 5 else 3, t.dims)
            if t.reshape is not None:
                r = Writer()
                r.packed_ints(1, t.reshape)
                m.message(5, r)
            if field_no == 5 and t.optional:
                m.uint(8, 1)
            c.message(field_no, m)
    for i, g in enumerate(cfg.instance_group):
        m = Writer()
        m.string(1, g.name or f"{cfg.name}_{i}")
        m.uint(2, g.count)
        m.uint(4, _KIND.get(g.kind, 0))
        c.message(7, m)
    c.string(8, cfg.default_model_filename)
    if cfg.dynamic_batching is not None:
        d = Writer()
        d.packed_ints(1, cfg.dynamic_batching.preferred_batch_size)
        d.uint(2, cfg.dynamic_batching.max_queue_delay_microseconds)
        if cfg.dynamic_batching.preserve_ordering:
            d.uint(3, 1)
        c.message(11, d)
    for key, value in cfg.parameters.items():
        e, p = Writer(), Writer()
        e.string(1, key)
        p.string(1, value)
        e.message(2, p)
        c.message(14, e)
    c.string(17, cfg.backend)
    out = Writer()
    out.message(1, c)
    return out.getvalue()
