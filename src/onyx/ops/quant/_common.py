"""Shared helpers of the quantization operators: parameter broadcasting and saturating casts."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.dtypes import to_numpy

INT_RANGES = {
    np.dtype(np.uint8): (0, 255),
    np.dtype(np.int8): (-128, 127),
    np.dtype(np.uint16): (0, 65535),
    np.dtype(np.int16): (-32768, 32767),
    np.dtype(np.int32): (-(2**31), 2**31 - 1),
    np.dtype(ml_dtypes.uint4): (0, 15),
    np.dtype(ml_dtypes.int4): (-8, 7),
    np.dtype(ml_dtypes.uint2): (0, 3),
    np.dtype(ml_dtypes.int2): (-2, 1),
}

# float types with no infinity and a NaN only: overflow without saturation gives NaN
FLOAT_TARGETS = {
    np.dtype(ml_dtypes.float8_e4m3fn),
    np.dtype(ml_dtypes.float8_e4m3fnuz),
    np.dtype(ml_dtypes.float8_e5m2),
    np.dtype(ml_dtypes.float8_e5m2fnuz),
    np.dtype(ml_dtypes.float4_e2m1fn),
    np.dtype(ml_dtypes.float6_e2m3fn),
    np.dtype(ml_dtypes.float6_e3m2fn),
}
# types whose cast always saturates (no inf / NaN encoding to fall back to)
ALWAYS_SATURATE = {
    np.dtype(ml_dtypes.float4_e2m1fn),
    np.dtype(ml_dtypes.float6_e2m3fn),
    np.dtype(ml_dtypes.float6_e3m2fn),
}
HAS_INF = {np.dtype(ml_dtypes.float8_e5m2)}


def scalar_scale(scale, what: str) -> np.ndarray:
    """``scale`` as an array, which must hold one value (opset 10 had no per-axis quantization)."""
    s = np.asarray(scale)
    if s.size != 1:
        raise InvalidArgument(f"{what} must be a scalar, got shape {s.shape}")
    return s


def dtype_from_attr(code: int, what: str) -> np.dtype:
    try:
        return to_numpy(int(code))
    except Exception as e:  # noqa: BLE001
        raise InvalidArgument(f"{what}: unsupported element type code {code}") from e


def to_float(a: np.ndarray, dtype=np.float32) -> np.ndarray:
    return np.asarray(a).astype(dtype, copy=False)


def broadcast_param(p: np.ndarray, x_shape: tuple, axis: int, block_size: int, name: str) -> np.ndarray:
    """Shape a scale / zero point so that it broadcasts against x (per-tensor, per-axis or blocked)."""
    p = np.asarray(p)
    rank = len(x_shape)
    if p.size == 1 and block_size == 0:
        return p.reshape(())
    if rank == 0:
        raise InvalidArgument(f"{name} of shape {p.shape} cannot apply to a scalar input")
    if not -rank <= axis < rank:
        raise InvalidArgument(f"axis {axis} out of range for input of rank {rank}")
    axis %= rank
    if block_size and block_size > 0:
        if p.ndim != rank:
            raise InvalidArgument(
                f"blocked quantization: {name} must have the input's rank {rank}, got shape {p.shape}"
            )
        d = x_shape[axis]
        s = p.shape[axis]
        lo = -(-d // s)
        hi = -(-d // (s - 1)) - 1 if s > 1 else max(d, block_size)  # one block: any size >= d
        if not lo <= block_size <= max(hi, lo):
            raise InvalidArgument(
                f"block_size {block_size} is invalid for axis length {d} and {name} shape {p.shape} "
                f"(accepted [{lo}, {hi}])"
            )
        for i in range(rank):
            if i != axis and p.shape[i] != x_shape[i]:
                raise InvalidArgument(
                    f"blocked quantization: {name} shape {p.shape} does not match input {x_shape} "
                    f"off axis {axis}"
                )
        return np.repeat(p, block_size, axis=axis)[(slice(None),) * axis + (slice(0, d),)]
    if p.ndim == 1:
        if p.shape[0] != x_shape[axis]:
            raise InvalidArgument(
                f"per-axis quantization: {name} has {p.shape[0]} values, "
                f"input axis {axis} has {x_shape[axis]}"
            )
        shape = [1] * rank
        shape[axis] = p.shape[0]
        return p.reshape(shape)
    raise InvalidArgument(f"{name} of shape {p.shape} is neither a scalar, 1-D, nor blocked (block_size=0)")


def saturate_cast(v: np.ndarray, out: np.dtype, saturate: int = 1) -> np.ndarray:
    """Round-to-nearest-even and saturate ``v`` (float) into ``out``."""
    out = np.dtype(out)
    if out in INT_RANGES:
        lo, hi = INT_RANGES[out]
        r = np.asarray(np.rint(v))  # a 0-d input gives a numpy scalar, which clip cannot write into
        np.clip(r, lo, hi, out=r)
        if out.itemsize == 1 and out.kind in "iu" or out in (np.dtype(np.int16), np.dtype(np.uint16)):
            return r.astype(out)
        return r.astype(np.int32).astype(out)
    if out in FLOAT_TARGETS:
        if saturate or out in ALWAYS_SATURATE:
            m = float(ml_dtypes.finfo(out).max)
            v = np.clip(v, -m, m)
        elif out not in HAS_INF:
            # no infinity: overflow (and infinities) become NaN
            m = float(ml_dtypes.finfo(out).max)
            v = np.where(np.abs(v) > m, np.nan, v) if np.any(np.abs(v) > m) else v
        return np.asarray(v).astype(np.float32, copy=False).astype(out)
    raise InvalidArgument(f"unsupported quantized type {out}")


def matmul_dims(a: list | None, b: list | None, fail) -> list | None:
    """numpy.matmul's output dims of symbolic shapes (1-D operands promoted and the added axis
    dropped); ``fail(msg)`` on mismatched static inner dims; None when a rank is unknown."""
    from onyx.shape_inference import broadcast_dims

    if a is None or b is None:
        return None
    if not a or not b:
        fail(f"matmul operands must not be scalars, got {a} and {b}")
    a2 = [1, *a] if len(a) == 1 else list(a)
    b2 = [*b, 1] if len(b) == 1 else list(b)
    k1, k2 = a2[-1], b2[-2]
    if isinstance(k1, int) and isinstance(k2, int) and k1 != k2:
        fail(f"shapes {a} and {b} do not multiply ({k1} != {k2})")
    batch = broadcast_dims([a2[:-2], b2[:-2]])
    out = [*batch, a2[-2], b2[-1]] if batch is not None else None
    if out is not None:
        if len(a) == 1:
            del out[-2]
        if len(b) == 1:
            del out[-1]
    return out


FLOAT_OUTPUTS = (1, 10, 16)  # float, float16, bfloat16: DequantizeLinear's possible output types
