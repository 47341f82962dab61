"""ONNX element types and their numpy counterparts.

Each ONNX ``TensorProto.DataType`` is an :class:`DataType` member. ``numpy_dtype`` maps it to the numpy
dtype that holds one element (ml_dtypes supplies bfloat16, the float8, float6, float4, int4 and int2
types); ``from_numpy`` goes the other way. Strings are held in numpy ``object`` arrays of ``str``.
"""

from __future__ import annotations

import enum

import numpy as np


class DataType(enum.IntEnum):
    """ONNX ``TensorProto.DataType`` codes."""

    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20
    UINT4 = 21
    INT4 = 22
    FLOAT4E2M1 = 23
    FLOAT8E8M0 = 24
    UINT2 = 25
    INT2 = 26
    FLOAT6E2M3 = 27
    FLOAT6E3M2 = 28

    @property
    def numpy_dtype(self) -> np.dtype:
        """The numpy dtype holding one element of this type."""
        try:
            return _TO_NUMPY[self]
        except KeyError:
            if self in _EXOTIC_NAMES:
                _load_exotic()
                return _TO_NUMPY[self]
            from onyx.errors import InvalidArgument

            raise InvalidArgument(f"element type {self.name} has no numpy dtype") from None

    @property
    def bitwidth(self) -> int:
        """Bits per element in ``raw_data`` (0 for strings)."""
        return _BITWIDTH.get(self, 0)

    @property
    def onnx_name(self) -> str:
        """The name onnxruntime uses in type strings, such as ``float`` in ``tensor(float)``."""
        return _ORT_NAMES[self]


_NATIVE: dict[DataType, np.dtype] = {
    DataType.FLOAT: np.dtype(np.float32),
    DataType.UINT8: np.dtype(np.uint8),
    DataType.INT8: np.dtype(np.int8),
    DataType.UINT16: np.dtype(np.uint16),
    DataType.INT16: np.dtype(np.int16),
    DataType.INT32: np.dtype(np.int32),
    DataType.INT64: np.dtype(np.int64),
    DataType.STRING: np.dtype(object),
    DataType.BOOL: np.dtype(np.bool_),
    DataType.FLOAT16: np.dtype(np.float16),
    DataType.DOUBLE: np.dtype(np.float64),
    DataType.UINT32: np.dtype(np.uint32),
    DataType.UINT64: np.dtype(np.uint64),
    DataType.COMPLEX64: np.dtype(np.complex64),
    DataType.COMPLEX128: np.dtype(np.complex128),
}
_EXOTIC_NAMES = {
    DataType.BFLOAT16: "bfloat16",
    DataType.FLOAT8E4M3FN: "float8_e4m3fn",
    DataType.FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
    DataType.FLOAT8E5M2: "float8_e5m2",
    DataType.FLOAT8E5M2FNUZ: "float8_e5m2fnuz",
    DataType.UINT4: "uint4",
    DataType.INT4: "int4",
    DataType.FLOAT4E2M1: "float4_e2m1fn",
    DataType.FLOAT8E8M0: "float8_e8m0fnu",
    DataType.UINT2: "uint2",
    DataType.INT2: "int2",
    DataType.FLOAT6E2M3: "float6_e2m3fn",
    DataType.FLOAT6E3M2: "float6_e3m2fn",
}
_TO_NUMPY: dict[DataType, np.dtype] = dict(_NATIVE)
_FROM_NUMPY: dict[np.dtype, DataType] = {v: k for k, v in _NATIVE.items()}
_exotic_loaded = False


def _load_exotic() -> None:
    """Import ml_dtypes (slow to import) only when a model meets bfloat16, float8, int4..."""
    global _exotic_loaded
    if _exotic_loaded:
        return
    import ml_dtypes

    for t, name in _EXOTIC_NAMES.items():
        dt = np.dtype(getattr(ml_dtypes, name))
        _TO_NUMPY[t] = dt
        _FROM_NUMPY[dt] = t
    _exotic_loaded = True


_BITWIDTH = {t: (_NATIVE[t].itemsize * 8) for t in _NATIVE if t != DataType.STRING}
_BITWIDTH.update(
    {
        DataType.BFLOAT16: 16,
        DataType.FLOAT8E4M3FN: 8,
        DataType.FLOAT8E4M3FNUZ: 8,
        DataType.FLOAT8E5M2: 8,
        DataType.FLOAT8E5M2FNUZ: 8,
        DataType.FLOAT8E8M0: 8,
        DataType.UINT4: 4,
        DataType.INT4: 4,
        DataType.FLOAT4E2M1: 4,
        DataType.UINT2: 2,
        DataType.INT2: 2,
        DataType.FLOAT6E2M3: 6,
        DataType.FLOAT6E3M2: 6,
    }
)

_ORT_NAMES = {
    DataType.UNDEFINED: "undefined",
    DataType.FLOAT: "float",
    DataType.UINT8: "uint8",
    DataType.INT8: "int8",
    DataType.UINT16: "uint16",
    DataType.INT16: "int16",
    DataType.INT32: "int32",
    DataType.INT64: "int64",
    DataType.STRING: "string",
    DataType.BOOL: "bool",
    DataType.FLOAT16: "float16",
    DataType.DOUBLE: "double",
    DataType.UINT32: "uint32",
    DataType.UINT64: "uint64",
    DataType.COMPLEX64: "complex64",
    DataType.COMPLEX128: "complex128",
    DataType.BFLOAT16: "bfloat16",
    DataType.FLOAT8E4M3FN: "float8e4m3fn",
    DataType.FLOAT8E4M3FNUZ: "float8e4m3fnuz",
    DataType.FLOAT8E5M2: "float8e5m2",
    DataType.FLOAT8E5M2FNUZ: "float8e5m2fnuz",
    DataType.UINT4: "uint4",
    DataType.INT4: "int4",
    DataType.FLOAT4E2M1: "float4e2m1",
    DataType.FLOAT8E8M0: "float8e8m0",
    DataType.UINT2: "uint2",
    DataType.INT2: "int2",
    DataType.FLOAT6E2M3: "float6e2m3",
    DataType.FLOAT6E3M2: "float6e3m2",
}

#: Types whose ``raw_data`` packs several elements per byte: elements per byte.
PACKED_SUBBYTE = {
    DataType.UINT4: 2,
    DataType.INT4: 2,
    DataType.FLOAT4E2M1: 2,
    DataType.UINT2: 4,
    DataType.INT2: 4,
}
SIX_BIT = {DataType.FLOAT6E2M3, DataType.FLOAT6E3M2}

FLOATING = {
    DataType.FLOAT,
    DataType.DOUBLE,
    DataType.FLOAT16,
    DataType.BFLOAT16,
    DataType.FLOAT8E4M3FN,
    DataType.FLOAT8E4M3FNUZ,
    DataType.FLOAT8E5M2,
    DataType.FLOAT8E5M2FNUZ,
    DataType.FLOAT8E8M0,
    DataType.FLOAT4E2M1,
    DataType.FLOAT6E2M3,
    DataType.FLOAT6E3M2,
}


def ml_dtype(name: str) -> np.dtype:
    """An ml_dtypes dtype by name (``"bfloat16"``), importing ml_dtypes (slow to import) on first use."""
    dt = _ML_BY_NAME.get(name)
    if dt is None:
        import ml_dtypes

        dt = _ML_BY_NAME[name] = np.dtype(getattr(ml_dtypes, name))
    return dt


_ML_BY_NAME: dict[str, np.dtype] = {}
_NUMPY_NATIVE = frozenset(
    np.dtype(t)
    for t in (
        np.float16,
        np.float32,
        np.float64,
        np.longdouble,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
    )
)


class LazyDtypeSet:
    """A set of ml_dtypes dtypes that imports ml_dtypes only when asked about an extension dtype.

    numpy's own dtypes are answered without the import; only a dtype that could be an extension type
    (an array can only have one once ml_dtypes is imported) loads it.
    """

    def __init__(self, *names: str):
        self._names = names
        self._set: frozenset[np.dtype] | None = None

    def _get(self) -> frozenset[np.dtype]:
        if self._set is None:
            self._set = frozenset(ml_dtype(n) for n in self._names)
        return self._set

    def __contains__(self, dtype: object) -> bool:
        try:
            dt = np.dtype(dtype)  # type: ignore[call-overload]
        except TypeError:
            return False
        if dt.kind not in "Vfiu" or dt in _NUMPY_NATIVE:
            return False
        return dt in self._get()

    def __iter__(self):
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._names)


def from_numpy(dtype: np.dtype | type) -> DataType:
    """The ONNX element type of a numpy dtype; str and bytes arrays map to STRING."""
    dt = np.dtype(dtype)
    if dt.kind in "OUS":
        return DataType.STRING
    if dt.byteorder == ">":
        dt = dt.newbyteorder("<")
    got = _FROM_NUMPY.get(dt)
    if got is not None:
        return got
    if dt.kind == "V" and not _exotic_loaded:
        _load_exotic()
    try:
        return _FROM_NUMPY[dt]
    except KeyError:
        from onyx.errors import InvalidArgument

        raise InvalidArgument(f"numpy dtype {dt} has no ONNX element type") from None


def to_numpy(elem_type: int) -> np.dtype:
    """The numpy dtype of an ONNX element type code."""
    try:
        return DataType(elem_type).numpy_dtype
    except ValueError:
        from onyx.errors import InvalidArgument

        raise InvalidArgument(f"unknown ONNX element type code {elem_type}") from None
