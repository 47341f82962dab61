"""TensorProto's typed data fields (float_data, int32_data, ...): their field numbers, which one holds
each element type, and decoding their segments into numpy arrays. The IR keeps a tensor's typed
segments and field number as decoded, for exact round trips, and calls here to read them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onyx.errors import InvalidGraph
from onyx.ir.dtypes import PACKED_SUBBYTE, SIX_BIT, DataType
from onyx.ir.tensor import unpack_subbyte
from onyx.proto.wire import decode_packed

# Which typed field holds each element type when raw_data is not used (onnx.proto's rules).
FLOAT_DATA, INT32_DATA, STRING_DATA, INT64_DATA, DOUBLE_DATA, UINT64_DATA = 4, 5, 6, 7, 10, 11
_FIELD_OF = {
    DataType.FLOAT: FLOAT_DATA,
    DataType.COMPLEX64: FLOAT_DATA,
    DataType.DOUBLE: DOUBLE_DATA,
    DataType.COMPLEX128: DOUBLE_DATA,
    DataType.INT64: INT64_DATA,
    DataType.UINT32: UINT64_DATA,
    DataType.UINT64: UINT64_DATA,
    DataType.STRING: STRING_DATA,
}


def typed_field_for(dtype: int) -> int:
    """The TensorProto field number that holds ``dtype`` when raw_data is not used."""
    return _FIELD_OF.get(dtype, INT32_DATA)


def typed_to_array(
    segments: list[Any], field_no: int | None, dt: DataType, dims: tuple[int, ...], name: str | None
) -> np.ndarray:
    """Decode the typed field (float_data, int32_data, ...) into an array of ``dt``."""
    count = math.prod(dims)
    field_no = field_no if field_no is not None else typed_field_for(dt)
    values = decode_packed(segments, field_no)
    npdt = dt.numpy_dtype
    if dt in (DataType.COMPLEX64, DataType.COMPLEX128):
        need = 2 * count
        _check_count(values.size, need, name, dims, dt)
        return values.astype(np.float32 if dt == DataType.COMPLEX64 else np.float64).view(npdt).reshape(dims)
    if field_no == INT32_DATA:
        if dt in PACKED_SUBBYTE:
            need = -(-count // PACKED_SUBBYTE[dt])
            _check_count(values.size, need, name, dims, dt)
            return unpack_subbyte(values.astype(np.uint8), dt, count).reshape(dims)
        _check_count(values.size, count, name, dims, dt)
        if npdt.itemsize == 2 and npdt.kind not in "iu":  # float16 / bfloat16 bit patterns
            return values.astype(np.uint16).view(npdt).reshape(dims)
        if dt in SIX_BIT:
            return (values.astype(np.uint8) & 0x3F).view(npdt).reshape(dims)
        if npdt.itemsize == 1 and npdt.kind not in "iub":  # float8 bit patterns
            return values.astype(np.uint8).view(npdt).reshape(dims)
        return values.astype(npdt).reshape(dims)
    _check_count(values.size, count, name, dims, dt)
    return values.astype(npdt).reshape(dims)


def _check_count(got: int, need: int, name, dims, dt) -> None:
    if got != need:
        raise InvalidGraph(
            f"tensor {name!r}: typed data holds {got} values but shape {list(dims)} of {dt.name} needs {need}"
        )
