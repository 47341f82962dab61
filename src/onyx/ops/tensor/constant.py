"""Constant: a tensor given as an attribute (value, sparse_value, value_float(s)/int(s)/string(s))."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import DataType
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.shape_inference import ShapeContext


def _one_of(**given):
    present = {k: v for k, v in given.items() if v is not None}
    if len(present) != 1:
        raise InvalidArgument(
            f"Constant: exactly one value attribute must be set, got {sorted(present) or 'none'}"
        )
    ((name, v),) = present.items()
    if name in ("value", "sparse_value"):
        return np.asarray(v)
    if name == "value_float":
        return np.array(v, dtype=np.float32)
    if name == "value_floats":
        return np.array(v, dtype=np.float32).reshape(-1)
    if name == "value_int":
        return np.array(v, dtype=np.int64)
    if name == "value_ints":
        return np.array(v, dtype=np.int64).reshape(-1)
    if name == "value_string":
        out = np.empty((), dtype=object)
        out[()] = v
        return out
    out = np.empty(len(v), dtype=object)  # value_strings
    out[:] = list(v)
    return out


@op("Constant", since=1, until=11)
def constant_1(*, value):
    return np.asarray(value)


@op("Constant", since=11, until=12)
def constant_11(*, value=None, sparse_value=None):
    return _one_of(value=value, sparse_value=sparse_value)


@op("Constant", since=12)
def constant_12(
    *,
    value=None,
    sparse_value=None,
    value_float=None,
    value_floats=None,
    value_int=None,
    value_ints=None,
    value_string=None,
    value_strings=None,
):
    return _one_of(
        value=value,
        sparse_value=sparse_value,
        value_float=value_float,
        value_floats=value_floats,
        value_int=value_int,
        value_ints=value_ints,
        value_string=value_string,
        value_strings=value_strings,
    )


# ---------------------------------------------------------------------------------------------------
# shape rule


_VALUE_ATTRS = {
    "value_float": (int(DataType.FLOAT), []),
    "value_floats": (int(DataType.FLOAT), None),
    "value_int": (int(DataType.INT64), []),
    "value_ints": (int(DataType.INT64), None),
    "value_string": (int(DataType.STRING), []),
    "value_strings": (int(DataType.STRING), None),
}


@shape_rule("Constant")
def _constant_shape(ctx: ShapeContext) -> None:
    for name in ("value", "sparse_value"):
        v = ctx.attr(name, None)
        if v is not None:
            v = np.asarray(v)
            ctx.set_output(0, S.elem_of_array(v), list(v.shape))
            return
    for name, (elem, dims) in _VALUE_ATTRS.items():
        v = ctx.attr(name, None)
        if v is not None:
            ctx.set_output(0, elem, dims if dims is not None else [len(v)])
            return
