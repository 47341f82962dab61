"""Helpers shared by the random kernels: the generator and the output element type."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import to_numpy
from onyx.ops.registry import KernelContext


def generator(ctx: KernelContext | None, seed: float | None) -> np.random.Generator:
    """The node's generator: seeded from the ``seed`` attribute when present, else from the run.

    The attribute is a float: a negative or fractional one is turned into a non-negative integer seed
    through its bit pattern, so that every distinct seed gives a distinct, reproducible stream.
    """
    if seed is not None:
        s = float(seed)
        if not (s >= 0 and s.is_integer()):
            seed = int.from_bytes(struct.pack("<d", s), "little")
    return (ctx or KernelContext()).rng(seed)


def float_dtype(code: int | None, default: np.dtype, op_name: str) -> np.dtype:
    """The numpy dtype of an output type code that must name a floating-point type."""
    dt = np.dtype(default) if code is None else to_numpy(code)
    if dt.kind != "f" and not _is_ml_float(dt):
        raise InvalidArgument(f"{op_name}: output type {dt} is not a floating-point type")
    return dt


def _is_ml_float(dt: np.dtype) -> bool:
    # ml_dtypes' bfloat16 and float8 types report kind 'V'; finfo accepts them
    import ml_dtypes

    try:
        ml_dtypes.finfo(dt)
        return True
    except (ValueError, TypeError):
        return False


def scaled_samples(draw, shape: tuple[int, ...], dt: np.dtype, scale: float, shift: float) -> np.ndarray:
    """``draw(shape, dtype=...) * scale + shift``, drawn and computed in float64 for a float64 output and
    in float32 for every other type (the multiply and add are skipped when they change nothing)."""
    work = np.float64 if dt == np.float64 else np.float32
    out = draw(shape, dtype=work)
    if scale != 1.0:
        out *= work(scale)
    if shift != 0.0:
        out += work(shift)
    return out


def like(input: Any, dtype: int | None, op_name: str) -> tuple[tuple[int, ...], np.dtype]:  # noqa: A002
    """The shape of a ``...Like`` op's input and the output type: ``dtype`` or else the input's."""
    x = np.asarray(input)
    return x.shape, float_dtype(dtype, x.dtype, op_name)


def cast(values: np.ndarray, dt: np.dtype) -> Any:
    """float64/float32 samples in the requested type (float32 is computed without a float64 pass)."""
    return values if values.dtype == dt else values.astype(dt)


def shape_of(shape: Any, op_name: str) -> tuple[int, ...]:
    dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise InvalidArgument(f"{op_name}: shape {list(dims)} has a negative dimension")
    return dims


def shape_attr_rule(ctx) -> None:
    """RandomNormal, RandomUniform: the ``shape`` attribute, of ``dtype`` (default float)."""
    ctx.set_output(0, int(ctx.attr("dtype", 1)), [int(d) for d in ctx.attr("shape")])


def like_shape_rule(ctx) -> None:
    """RandomNormalLike, RandomUniformLike: the input's shape, of ``dtype`` (default: the input's type)."""
    dtype = ctx.attr("dtype")
    ctx.set_output(0, int(dtype) if dtype is not None else ctx.input_elem(0), ctx.input_shape(0))
