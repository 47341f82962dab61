"""Helpers shared by the signal kernels: the [..., 1|2] real/complex layout and scalar inputs."""

from __future__ import annotations

from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import to_numpy


def scalar_int(value: Any, what: str) -> int:
    arr = np.asarray(value)
    if arr.size != 1:
        raise InvalidArgument(f"{what} must be a scalar, got shape {arr.shape}")
    v = arr.reshape(-1)[0]
    if arr.dtype.kind not in "iu" and float(v) != int(v):
        raise InvalidArgument(f"{what} must be an integer, got {v}")
    return int(v)


def compute_dtype(dt: np.dtype) -> tuple[type, type]:
    """(real, complex) numpy types to compute in: double for float64, single for everything else."""
    if dt == np.float64:
        return np.float64, np.complex128
    return np.float32, np.complex64


def to_complex(x: np.ndarray, op_name: str) -> tuple[np.ndarray, bool]:
    """A [..., 1] (real) or [..., 2] (complex) tensor as (numpy array without the last axis, is_real)."""
    if x.ndim < 1 or x.shape[-1] not in (1, 2):
        raise InvalidArgument(
            f"{op_name}: the last dimension must be 1 (real) or 2 (complex), got shape {x.shape}"
        )
    real, cplx = compute_dtype(x.dtype)
    if x.shape[-1] == 1:
        return x[..., 0].astype(real, copy=False), True
    xr = x.astype(real, copy=False)
    out = np.empty(x.shape[:-1], dtype=cplx)
    out.real = xr[..., 0]
    out.imag = xr[..., 1]
    return out, False


def from_complex(y: np.ndarray, dt: np.dtype) -> np.ndarray:
    """A complex array as [..., 2] (real, imaginary) in element type ``dt``."""
    real, _ = compute_dtype(dt)
    out = np.empty(y.shape + (2,), dtype=real)
    out[..., 0] = y.real
    out[..., 1] = y.imag
    return out if out.dtype == dt else out.astype(dt)


def output_dtype(code: int, op_name: str) -> np.dtype:
    dt = to_numpy(code)
    if dt.kind in "OSUbc":
        raise InvalidArgument(f"{op_name}: output_datatype {code} ({dt}) is not a numeric type")
    return dt


# -- shape-rule helpers ------------------------------------------------------------------------


def known_int(ctx, i: int):
    """The value of scalar input ``i`` when known at load time (an int or a symbol), else None."""
    v = ctx.input_ints(i) if ctx.has_input(i) else None
    if v is None or len(v) != 1:
        return None
    return v[0]


def window_shape_rule(ctx) -> None:
    """Hann/Hamming/Blackman windows: [size] of output_datatype (default float)."""
    n = known_int(ctx, 0)
    if isinstance(n, int) and n < 0:
        ctx.fail(f"size must be >= 0, got {n}")
    ctx.set_output(0, int(ctx.attr("output_datatype", 1)), [n if n is not None else ctx.new_dim()])
