"""The quantizer's enums (named and numbered as onnxruntime.quantization's) and the integer ranges."""

from __future__ import annotations

import enum

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import DataType


class QuantType(enum.Enum):
    """The element type a tensor is quantized to."""

    QInt8 = 0
    QUInt8 = 1
    QFLOAT8E4M3FN = 2
    QInt16 = 3
    QUInt16 = 4
    QInt4 = 5
    QUInt4 = 6

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def from_string(name: str) -> QuantType:
        try:
            return QuantType[name]
        except KeyError:
            raise InvalidArgument(
                f"unknown QuantType {name!r}; expected one of {', '.join(QuantType.__members__)}"
            ) from None

    @property
    def tensor_type(self) -> int:
        """The ONNX element type code."""
        return int(_TENSOR_TYPE[self])


_TENSOR_TYPE = {
    QuantType.QInt8: DataType.INT8,
    QuantType.QUInt8: DataType.UINT8,
    QuantType.QFLOAT8E4M3FN: DataType.FLOAT8E4M3FN,
    QuantType.QInt16: DataType.INT16,
    QuantType.QUInt16: DataType.UINT16,
    QuantType.QInt4: DataType.INT4,
    QuantType.QUInt4: DataType.UINT4,
}


class QuantFormat(enum.Enum):
    """QOperator: quantized operators (QLinearConv...); QDQ: QuantizeLinear/DequantizeLinear pairs."""

    QOperator = 0
    QDQ = 1

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def from_string(name: str) -> QuantFormat:
        try:
            return QuantFormat[name]
        except KeyError:
            raise InvalidArgument(f"unknown QuantFormat {name!r}; expected QOperator or QDQ") from None


class QuantizationMode(enum.Enum):
    IntegerOps = 0
    QLinearOps = 1

    def __str__(self) -> str:
        return self.name


class CalibrationMethod(enum.Enum):
    MinMax = 0
    Entropy = 1
    Percentile = 2
    Distribution = 3


def as_quant_type(value: QuantType | str | int, what: str) -> QuantType:
    """Accept a QuantType, its name, or onnxruntime's QuantType (same names); anything else is an error."""
    if isinstance(value, QuantType):
        return value
    name = getattr(value, "name", value)
    if isinstance(name, str) and name in QuantType.__members__:
        return QuantType[name]
    raise InvalidArgument(f"{what}: {value!r} is not a QuantType (one of {', '.join(QuantType.__members__)})")


def as_enum(value, enum_type, what: str):
    """Accept a member of ``enum_type``, its name, or an enum of another package with the same names."""
    if isinstance(value, enum_type):
        return value
    name = getattr(value, "name", value)
    if isinstance(name, str) and name in enum_type.__members__:
        return enum_type[name]
    raise InvalidArgument(
        f"{what}: {value!r} is not a {enum_type.__name__} (one of {', '.join(enum_type.__members__)})"
    )


# (qmin, qmax) by element type: full, symmetric and reduced ranges, as onnxruntime's quantizer uses them
_FULL = {
    DataType.UINT8: (0, 255),
    DataType.INT8: (-128, 127),
    DataType.UINT16: (0, 65535),
    DataType.INT16: (-32768, 32767),
    DataType.UINT4: (0, 15),
    DataType.INT4: (-8, 7),
}
_SYMMETRIC = {DataType.INT8: (-127, 127), DataType.INT16: (-32767, 32767)}
_REDUCED = {
    DataType.UINT8: (0, 127),
    DataType.INT8: (-64, 64),
    DataType.UINT16: (0, 32767),
    DataType.INT16: (-16384, 16384),
    DataType.UINT4: (0, 7),
    DataType.INT4: (-4, 3),
}


def qrange(elem_type: int, reduce_range: bool = False, symmetric: bool = False) -> tuple[int, int]:
    """(qmin, qmax) for an integer element type: the reduced range wins over the symmetric one."""
    dt = DataType(elem_type)
    if dt not in _FULL:
        raise InvalidArgument(f"no integer range for element type {dt.name}")
    if reduce_range:
        return _REDUCED[dt]
    if symmetric and dt in _SYMMETRIC:
        return _SYMMETRIC[dt]
    return _FULL[dt]


def numpy_dtype(elem_type: int) -> np.dtype:
    return DataType(elem_type).numpy_dtype


SIXTEEN_BIT = {QuantType.QInt16, QuantType.QUInt16}
FOUR_BIT = {QuantType.QInt4, QuantType.QUInt4}
