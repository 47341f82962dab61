"""Scales, zero points and quantized values: onnxruntime's quantizer arithmetic, step for step.

The same calibration ranges must give bit-identical scales and zero points, so the order of the float
operations matters: the range is widened to contain 0, the scale ``(rmax - rmin) / (qmax - qmin)`` is
computed in float64 and stored as float32, the zero point ``round(qmin - rmin / scale)`` uses the float64
scale and rounds half to even, symmetric ranges take the middle of [qmin, qmax], and values are
quantized as ``round(x_f32 / scale_f32) + zero_point`` clipped to the type's full range.

FLOAT8E4M3FN has no range to fit: its scale maps the tensor's standard deviation onto the standard deviation
of float8's own finite values (both distributions taken as alike), its zero point is a float8 0, and values
are ``x_f32 / scale_f32`` cast to float8 with saturation to +-448 (round to nearest even).
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import DataType
from onyx.quantization.types import numpy_dtype, qrange

FLOAT8 = int(DataType.FLOAT8E4M3FN)

INT32_MIN, INT32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


def compute_scale_zp(
    rmin, rmax, qmin: int, qmax: int, symmetric: bool = False, min_real_range: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(zero_point as int64, scale in rmin's float type) for ranges ``rmin``/``rmax`` (scalars or arrays)."""
    rmin = np.asarray(rmin)
    rmax = np.asarray(rmax)
    fdtype = rmin.dtype if rmin.dtype.kind == "f" else np.dtype(np.float32)
    rmin = np.minimum(rmin.astype(fdtype), np.array(0, fdtype))
    rmax = np.maximum(rmax.astype(fdtype), np.array(0, fdtype))
    if min_real_range is not None:
        rmax = np.maximum(rmax, rmin + np.asarray(min_real_range, dtype=fdtype))
    if symmetric:
        absmax = np.maximum(np.abs(rmin), np.abs(rmax))
        rmin, rmax = -absmax, absmax
    scale64 = (rmax.astype(np.float64) - rmin.astype(np.float64)) / (float(qmax) - float(qmin))
    tiny = np.finfo(fdtype).smallest_subnormal if fdtype == np.float16 else np.finfo(fdtype).tiny
    stored = scale64.astype(fdtype)
    too_small = (stored if fdtype == np.float16 else scale64) < tiny
    safe = np.where(too_small, 1.0, scale64)
    if symmetric:
        zp = np.full(scale64.shape, np.round((qmin + qmax) / 2.0))
    else:
        zp = np.round(qmin - rmin.astype(np.float64) / safe)
    zp = np.where(too_small, 0, zp).astype(np.int64)
    scale = np.where(too_small, np.array(1.0, fdtype), stored).astype(fdtype)
    return zp, scale


def data_params(
    data: np.ndarray,
    elem_type: int,
    symmetric: bool,
    reduce_range: bool = False,
    min_real_range: float | None = None,
    rmin: float | None = None,
    rmax: float | None = None,
    axis: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Zero point (in the quantized type) and scale for an initializer, per tensor or per ``axis``."""
    qmin, qmax = qrange(elem_type, reduce_range, symmetric)
    fdtype = data.dtype if data.dtype.kind == "f" else np.dtype(np.float32)
    if axis is None:
        if data.size == 0:
            return np.array(0, numpy_dtype(elem_type)), np.array(1.0, fdtype)
        lo = np.array(data.min() if rmin is None else rmin, dtype=fdtype)
        hi = np.array(data.max() if rmax is None else rmax, dtype=fdtype)
    else:
        others = tuple(i for i in range(data.ndim) if i != axis)
        lo = data.min(axis=others) if rmin is None else np.full(data.shape[axis], rmin, fdtype)
        hi = data.max(axis=others) if rmax is None else np.full(data.shape[axis], rmax, fdtype)
    zp, scale = compute_scale_zp(lo, hi, qmin, qmax, symmetric, min_real_range)
    return zp.astype(numpy_dtype(elem_type)), scale


def quantize_values(
    data: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, elem_type: int, axis: int | None = None
) -> np.ndarray:
    """``clip(round(x / scale) + zero_point)`` in float32, per tensor or per ``axis``."""
    scale = np.asarray(scale)
    zp = np.asarray(zero_point)
    if axis is not None and scale.ndim == 1:
        shape = [1] * data.ndim
        shape[axis] = -1
        scale = scale.reshape(shape)
        zp = zp.reshape(shape)
    if elem_type == FLOAT8:
        return quantize_float8(data, scale)
    q = np.round(data.astype(np.float32) / scale.astype(np.float32)) + zp.astype(np.float32)
    qmin, qmax = qrange(elem_type)
    np.clip(q, qmin, qmax, out=q)
    return q.astype(np.int64).astype(numpy_dtype(elem_type))


def quantize_bias(
    bias: np.ndarray, input_scale: np.ndarray, weight_scale: np.ndarray, beta: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """(int32 bias, its float scale as a 1-D array): scale = input_scale * weight_scale * beta, zp = 0."""
    if beta == 0:
        bias = np.zeros_like(bias)
        beta = 1.0
    scale = np.asarray(input_scale) * np.asarray(weight_scale) * beta
    q = np.asarray(bias, dtype=np.float64) / np.asarray(scale, dtype=np.float64)
    q = np.clip(q.round(), float(INT32_MIN), float(INT32_MAX)).astype(np.int32)
    return q.reshape(bias.shape), np.asarray(scale, dtype=bias.dtype).reshape(-1)


def adjust_weight_scale_for_bias(
    input_scale: np.ndarray, weight_scale: np.ndarray, bias: np.ndarray, per_channel: bool
) -> np.ndarray | None:
    """A larger weight scale when input_scale * weight_scale would push the int32 bias out of range
    (onnxruntime's QDQ quantizer does this unless QDQDisableWeightAdjustForInt32Bias); None if fine."""
    eps = 1.0001
    span = float(INT32_MAX) - float(INT32_MIN + 1)
    in64 = float(np.asarray(input_scale).reshape(-1)[0])
    ws = np.array(weight_scale, copy=True)
    changed = False
    if not per_channel:
        b = np.asarray(bias)
        absmax = max(abs(min(float(b.min()), 0.0)), abs(max(float(b.max()), 0.0)))
        smallest = eps * (2.0 * absmax) / span
        cand = in64 * float(ws.reshape(-1)[0])
        if 0.0 < cand < smallest:
            ws = np.array(float(ws.reshape(-1)[0]) * (smallest / cand), dtype=ws.dtype).reshape(ws.shape)
            changed = True
    elif ws.ndim == 1:
        for i in range(ws.shape[0]):
            smallest = eps * (2.0 * abs(float(bias[i]))) / span
            cand = in64 * float(ws[i])
            if 0.0 < cand < smallest:
                ws[i] = float(ws[i]) * (smallest / cand)
                changed = True
    return ws if changed else None


# ------------------------------------------------------------------------------------------------
# FLOAT8E4M3FN


@functools.cache
def float8_std() -> np.float32:
    """The standard deviation (float32) of every finite float8_e4m3fn value, in code order."""
    values = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    return np.std(values[np.isfinite(values)])


def float8_scale(std: np.ndarray, what: str) -> np.ndarray:
    """The scale that maps a distribution of standard deviation ``std`` onto float8's."""
    std = np.asarray(std)
    if not np.isfinite(std) or std <= 0:
        raise InvalidArgument(
            f"FLOAT8E4M3FN quantization of {what}: its values have standard deviation {float(std)}, "
            "so no scale maps them onto float8 (a constant tensor cannot be quantized to float8)"
        )
    return np.array(std / float8_std(), dtype=std.dtype)


def float8_data_params(data: np.ndarray, name: str, axis: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(float8 zero point(s), scale(s)) of an initializer from its standard deviation, per tensor or per
    ``axis`` (each channel's own deviation)."""
    zero = np.zeros((), ml_dtypes.float8_e4m3fn)
    if axis is None:
        return zero, float8_scale(np.std(data.reshape(-1)), f"initializer {name!r}")
    scales = [
        float8_scale(np.std(data.take(i, axis).reshape(-1)), f"channel {i} of initializer {name!r}")
        for i in range(data.shape[axis])
    ]
    return np.zeros(len(scales), ml_dtypes.float8_e4m3fn), np.array(scales)


def quantize_float8(data: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``x / scale`` in the data's float type, saturated to float8's finite range and rounded to it."""
    limit = float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max)
    q = data / scale
    return np.clip(q, -limit, limit).astype(ml_dtypes.float8_e4m3fn)
