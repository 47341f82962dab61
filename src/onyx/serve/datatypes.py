"""Tensor datatypes of the Open Inference Protocol and their numpy, ONNX and config.pbtxt names.

Every decoder here checks element counts against the bytes (or JSON values) actually received before it
allocates anything, so a request can never make the server allocate more than its body size implies.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import ml_dtypes
import numpy as np

from onyx.serve.errors import BadRequest

#: protocol datatype -> numpy dtype (BYTES tensors are object arrays of ``bytes``)
NUMPY: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "BYTES": np.dtype(object),
}

#: ONNX element type names (as ``NodeArg.type`` spells them inside ``tensor(...)``) -> protocol datatype
_FROM_ONNX = {
    "bool": "BOOL",
    "uint8": "UINT8",
    "uint16": "UINT16",
    "uint32": "UINT32",
    "uint64": "UINT64",
    "int8": "INT8",
    "int16": "INT16",
    "int32": "INT32",
    "int64": "INT64",
    "float16": "FP16",
    "float": "FP32",
    "double": "FP64",
    "bfloat16": "BF16",
    "string": "BYTES",
}

#: config.pbtxt's DataType enum names; TYPE_STRING is the protocol's BYTES
_CONFIG = {f"TYPE_{k}": k for k in NUMPY if k != "BYTES"} | {"TYPE_STRING": "BYTES"}


def from_onnx_type(type_string: str) -> str | None:
    """The protocol datatype of an ONNX type string such as ``tensor(float)``; None if not a tensor."""
    if type_string.startswith("tensor(") and type_string.endswith(")"):
        return _FROM_ONNX.get(type_string[7:-1])
    return None


def from_config(name: str) -> str:
    """The protocol datatype of a config.pbtxt ``data_type`` (TYPE_FP32 -> FP32, TYPE_STRING -> BYTES)."""
    try:
        return _CONFIG[name]
    except KeyError:
        raise BadRequest(f"unknown data_type {name!r}; expected one of {sorted(_CONFIG)}") from None


def to_config(datatype: str) -> str:
    """The config.pbtxt name of a protocol datatype (BYTES -> TYPE_STRING)."""
    return "TYPE_STRING" if datatype == "BYTES" else f"TYPE_{datatype}"


def from_numpy(dtype: np.dtype) -> str:
    """The protocol datatype of a numpy dtype (str, bytes and object arrays are BYTES)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OUS":
        return "BYTES"
    for name, dt in NUMPY.items():
        if dt == dtype:
            return name
    raise BadRequest(f"numpy dtype {dtype} has no Open Inference Protocol datatype")


def check_datatype(datatype: Any, where: str) -> str:
    if not isinstance(datatype, str) or datatype not in NUMPY:
        raise BadRequest(f"{where}: unknown datatype {datatype!r}; expected one of {list(NUMPY)}")
    return datatype


def check_shape(shape: Any, where: str) -> tuple[int, ...]:
    """A shape from a request: a list of non-negative ints."""
    if not isinstance(shape, list | tuple) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise BadRequest(f"{where}: shape must be a list of non-negative integers, got {shape!r}")
    return tuple(shape)


def element_count(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


# ---------------------------------------------------------------------------------------------
# binary (raw) tensor data: the binary extension of REST and raw_*_contents of gRPC

_LEN = struct.Struct("<I")


def from_raw(buf: Any, datatype: str, shape: tuple[int, ...], where: str) -> np.ndarray:
    """Decode the raw bytes of one tensor: little-endian elements, or for BYTES each element as a 4-byte
    little-endian length and its bytes. The byte count must match the shape exactly."""
    n = element_count(shape)
    size = memoryview(buf).nbytes
    if datatype == "BYTES":
        return _bytes_from_raw(buf, size, n, shape, where)
    itemsize = NUMPY[datatype].itemsize
    if size != n * itemsize:
        raise BadRequest(
            f"{where}: {size} bytes of {datatype} data do not hold shape {list(shape)} "
            f"({n} elements x {itemsize} bytes = {n * itemsize})"
        )
    dt = NUMPY[datatype].newbyteorder("<") if itemsize > 1 else NUMPY[datatype]
    arr = np.frombuffer(buf, dtype=dt, count=n)
    if datatype == "BOOL":
        arr = arr.view(np.uint8) != 0  # any non-zero byte is true; never an invalid numpy bool
    return arr.astype(NUMPY[datatype], copy=False).reshape(shape)


def _bytes_from_raw(buf: Any, size: int, n: int, shape: tuple[int, ...], where: str) -> np.ndarray:
    if n * 4 > size:  # every element needs at least its 4-byte length: checked before allocating
        raise BadRequest(f"{where}: {size} bytes cannot hold {n} BYTES elements of shape {list(shape)}")
    mv = memoryview(buf).cast("B")
    items = []
    pos = 0
    for _ in range(n):
        if pos + 4 > size:
            raise BadRequest(f"{where}: BYTES data ends inside the length of element {len(items)}")
        (length,) = _LEN.unpack_from(mv, pos)
        pos += 4
        if pos + length > size:
            raise BadRequest(
                f"{where}: BYTES element {len(items)} claims {length} bytes but only {size - pos} remain"
            )
        items.append(bytes(mv[pos : pos + length]))
        pos += length
    if pos != size:
        raise BadRequest(f"{where}: {size - pos} bytes left over after {n} BYTES elements")
    out = np.empty(n, dtype=object)
    out[:] = items
    return out.reshape(shape)


def to_raw(array: np.ndarray, datatype: str) -> bytes:
    """Encode a tensor as raw little-endian bytes (BYTES: 4-byte length + bytes per element)."""
    if datatype == "BYTES":
        parts = []
        for item in array.reshape(-1):
            b = as_bytes(item)
            parts.append(_LEN.pack(len(b)))
            parts.append(b)
        return b"".join(parts)
    dt = NUMPY[datatype]
    return np.ascontiguousarray(array, dtype=dt.newbyteorder("<") if dt.itemsize > 1 else dt).tobytes()


def as_bytes(item: Any) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8", errors="surrogateescape")
    return str(item).encode("utf-8")


# ---------------------------------------------------------------------------------------------
# JSON tensor data


def from_json(data: Any, datatype: str, shape: tuple[int, ...], where: str) -> np.ndarray:
    """Decode the ``data`` of a JSON tensor: a flat or nested (row-major) list of values, or one value."""
    flat = _flatten(data, where)
    n = element_count(shape)
    if len(flat) != n:
        raise BadRequest(f"{where}: {len(flat)} values given for shape {list(shape)} ({n} elements)")
    if datatype == "BYTES":
        if not all(isinstance(v, str) for v in flat):
            raise BadRequest(f"{where}: BYTES data must be strings")
        out = np.empty(n, dtype=object)
        out[:] = [v.encode("utf-8", errors="surrogateescape") for v in flat]
        return out.reshape(shape)
    if not flat:
        return np.zeros(shape, dtype=NUMPY[datatype])
    if datatype == "BOOL":
        if not all(isinstance(v, bool) for v in flat):
            raise BadRequest(f"{where}: BOOL data must be true or false")
        return np.array(flat, dtype=np.bool_).reshape(shape)
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in flat):
        raise BadRequest(f"{where}: {datatype} data must be numbers")
    dt = NUMPY[datatype]
    if dt.kind in "iu":
        if not all(isinstance(v, int) for v in flat):
            raise BadRequest(f"{where}: {datatype} data must be integers")
        info = np.iinfo(dt)
        lo, hi = min(flat), max(flat)
        if lo < info.min or hi > info.max:
            raise BadRequest(f"{where}: value {lo if lo < info.min else hi} is out of range for {datatype}")
        return np.array(flat, dtype=dt).reshape(shape)
    return np.array(flat, dtype=np.float64).astype(dt).reshape(shape)


def _flatten(data: Any, where: str) -> list:
    if not isinstance(data, list):
        return [data]
    if not any(isinstance(v, list) for v in data):
        return data
    flat: list = []
    stack = [iter(data)]
    while stack:
        for v in stack[-1]:
            if isinstance(v, list):
                if len(stack) > 32:
                    raise BadRequest(f"{where}: data nested more than 32 levels deep")
                stack.append(iter(v))
                break
            flat.append(v)
        else:
            stack.pop()
    return flat


def to_json(array: np.ndarray, datatype: str) -> list:
    """A tensor's values as a flat JSON list (BYTES as UTF-8 strings, invalid bytes replaced)."""
    flat = array.reshape(-1)
    if datatype == "BYTES":
        return [as_bytes(v).decode("utf-8", errors="replace") for v in flat]
    if datatype in ("FP16", "BF16"):
        return flat.astype(np.float32).tolist()
    return flat.tolist()
