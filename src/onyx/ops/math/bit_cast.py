"""BitCast: reinterpret the bits of each element as another type of the same bit width."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import DataType, from_numpy
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext

_SUB_BYTE = {
    DataType.UINT4: 4,
    DataType.INT4: 4,
    DataType.FLOAT4E2M1: 4,
    DataType.UINT2: 2,
    DataType.INT2: 2,
}


def _bits_of_sub_byte(x, bits):
    """The raw ``bits``-bit patterns of a 4- or 2-bit tensor, as uint8."""
    t = from_numpy(x.dtype)
    if t in (DataType.UINT4, DataType.UINT2):
        return x.astype(np.uint8)
    if t in (DataType.INT4, DataType.INT2):
        return (x.astype(np.int8).view(np.uint8)) & ((1 << bits) - 1)
    return x.view(np.uint8) & ((1 << bits) - 1)  # float4e2m1 is stored as its code


def _sub_byte_from_bits(b, t):
    dt = t.numpy_dtype
    bits = _SUB_BYTE[t]
    if t in (DataType.UINT4, DataType.UINT2):
        return b.astype(dt)
    if t in (DataType.INT4, DataType.INT2):
        signed = b.astype(np.int8)
        signed = np.where(signed >= (1 << (bits - 1)), signed - (1 << bits), signed).astype(np.int8)
        return signed.astype(dt)
    return b.view(dt)


@op("BitCast", since=26)
def bit_cast_26(x, *, to):
    try:
        t = DataType(to)
        dt = t.numpy_dtype
    except ValueError:
        raise InvalidArgument(f"BitCast: unknown element type code to={to}") from None
    src = from_numpy(x.dtype)
    if src == DataType.STRING or t == DataType.STRING:
        raise InvalidArgument("BitCast: string tensors cannot be bit-cast")
    if src.bitwidth != t.bitwidth:
        raise InvalidArgument(
            f"BitCast: input type {src.name} has {src.bitwidth} bits, target {t.name} has {t.bitwidth}"
        )
    if src in _SUB_BYTE:
        return _sub_byte_from_bits(_bits_of_sub_byte(x, src.bitwidth), t)
    x = x.copy()  # contiguous, and the result owns its buffer
    if dt == np.bool_:
        return x.view(np.uint8) != 0
    return x.view(dt)


@shape_rule("BitCast")
def _bit_cast_shape(ctx: ShapeContext) -> None:
    """The input's shape with element type ``to``; the bit widths must agree (no size change)."""
    to = ctx.attr("to")
    if not isinstance(to, int):
        ctx.fail(f"attribute 'to' must be an element type code, got {to!r}")
    try:
        t = DataType(to)
    except ValueError:
        ctx.fail(f"unknown element type code to={to}")
    if t in (DataType.STRING, DataType.UNDEFINED):
        ctx.fail(f"cannot bit-cast to {t.name}")
    try:
        s = None if ctx.input_elem(0) is None else DataType(ctx.input_elem(0))
    except ValueError:
        s = None
    if s is not None:
        if s == DataType.STRING:
            ctx.fail("string tensors cannot be bit-cast")
        if s.bitwidth != t.bitwidth:
            ctx.fail(f"input type {s.name} has {s.bitwidth} bits, target {t.name} has {t.bitwidth}")
    ctx.set_output(0, int(t), ctx.input_shape(0))
