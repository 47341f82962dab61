"""com.microsoft GatherBlockQuantized: a Gather over a block-quantized table (an int4 embedding, the
table ``MatMulNBitsQuantizer`` writes for Gather), dequantized after the gather so that only the rows
read are ever unpacked or converted.

``data`` is int4 / uint4 (one element per value, logical shape), uint8 holding ``8 // bits`` codes a
byte along the last axis (lowest bits first; then ``gather_axis`` must be 0 and ``quantize_axis`` the
last axis), or float8 / float4 (symmetric, no zero point; ``block_size`` 0 means one block over the
whole axis, and a scales dim of 1 off ``quantize_axis`` broadcasts). ``scales`` has data's rank with
ceil(dim / block_size) blocks along ``quantize_axis``. An element is ``float(q - zp) * scale`` in
float32 (onnxruntime's arithmetic), cast to the scales' type; the default zero point is 0 for
int4/uint4 and ``2**(bits-1)`` for uint8. As the spec says, and unlike Gather, an index outside
[-s, s) gives a slice of zeros.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels.nbits import unpack_codes
from onyx.ops.registry import op, shape_rule

WHAT = "GatherBlockQuantized"
F32 = np.float32
_FP_CODES = {"float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn"}
_SCALE_TYPES = {"float32", "float16", "bfloat16"}


def _kind(data: np.ndarray) -> str:
    name = data.dtype.name
    if name in ("int4", "uint4"):
        return "int4"
    if name == "uint8":
        return "uint8"
    if name in _FP_CODES:
        return "fp"
    raise InvalidArgument(f"{WHAT}: data must be int4, uint4, uint8, float8 or float4e2m1, got {data.dtype}")


def _axis(axis: int, rank: int, what: str) -> int:
    a = int(axis)
    if not -rank <= a < rank:
        raise InvalidArgument(f"{WHAT}: {what}={a} is out of range for data of rank {rank}")
    return a + rank if a < 0 else a


def _check_attrs(kind: str, bits: int, block_size: int) -> None:
    power = block_size >= 16 and not block_size & (block_size - 1)
    if not (power or (kind == "fp" and block_size == 0)):
        raise InvalidArgument(
            f"{WHAT}: block_size must be a power of 2 and not less than 16"
            f"{' (or 0 for float8/float4 data)' if kind == 'fp' else ''}, got {block_size}"
        )
    if kind == "uint8" and bits not in (2, 4, 8):
        raise InvalidArgument(f"{WHAT}: bits must be 2, 4 or 8 for uint8 data, got {bits}")
    if kind == "int4" and bits != 4:
        raise InvalidArgument(f"{WHAT}: bits must be 4 for int4/uint4 data, got {bits}")


def _check_tables(data, scales, zero_points, kind: str, qa: int, per: int, block: int) -> int:
    """Check scales' and zero points' types and shapes; returns the number of blocks along qa."""
    if scales.dtype.name not in _SCALE_TYPES:
        raise InvalidArgument(f"{WHAT}: scales must be float, float16 or bfloat16, got {scales.dtype}")
    if scales.ndim != data.ndim:
        raise InvalidArgument(
            f"{WHAT}: scales must have data's rank {data.ndim}, got shape {scales.shape} for data "
            f"{data.shape}"
        )
    dim = data.shape[qa] * per
    kb = -(-dim // block) if block else 1
    for i, (d, s) in enumerate(zip(data.shape, scales.shape, strict=True)):
        want = kb if i == qa else d
        if s != want and not (kind == "fp" and i != qa and s == 1):
            raise InvalidArgument(
                f"{WHAT}: scales shape {scales.shape} does not match data {data.shape} with "
                f"quantize_axis={qa}, block_size={block} (axis {i} must be {want})"
            )
    if zero_points is None:
        return kb
    if kind == "fp":
        raise InvalidArgument(f"{WHAT}: zero_points must not be given for {data.dtype} data")
    if zero_points.dtype != data.dtype:
        raise InvalidArgument(
            f"{WHAT}: zero_points must have data's type {data.dtype}, got {zero_points.dtype}"
        )
    want_zp = list(scales.shape)
    if per > 1:
        want_zp[qa] = -(-kb // per)
    if list(zero_points.shape) != want_zp:
        raise InvalidArgument(
            f"{WHAT}: zero_points must have shape {tuple(want_zp)} for scales {scales.shape}, "
            f"got {zero_points.shape}"
        )
    return kb


def _unpack(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """uint8 codes packed ``8 // bits`` a byte along the last axis -> int32, the first ``count``."""
    rows = unpack_codes(packed.reshape(-1, packed.shape[-1]), bits, count)
    return rows.reshape(packed.shape[:-1] + (count,)).astype(np.int32)


def _per_element(table: np.ndarray, g: int, qa: int, rows: np.ndarray, block: int, dim: int) -> np.ndarray:
    """``table`` (one entry per block of ``block`` along qa) laid out like the gathered values: axis g
    holding ``rows``, axis qa expanded to ``dim``; a broadcast axis of size 1 stays 1."""
    if g == qa:
        return np.take(table, rows // block, axis=g)
    t = table if table.shape[g] == 1 else np.take(table, rows, axis=g)
    if block > 1:
        t = np.repeat(t, block, axis=qa)[(slice(None),) * qa + (slice(0, dim),)]
    return t


@op("GatherBlockQuantized", domain="com.microsoft", since=1)
def gather_block_quantized(
    data,
    indices,
    scales,
    zero_points=None,
    *,
    bits=4,
    block_size=128,
    gather_axis=0,
    quantize_axis=1,
):
    data, indices, scales = np.asarray(data), np.asarray(indices), np.asarray(scales)
    kind = _kind(data)
    if data.ndim < 1:
        raise InvalidArgument(f"{WHAT}: data must have rank >= 1, got a scalar")
    if indices.dtype not in (np.int32, np.int64):
        raise InvalidArgument(f"{WHAT}: indices must be int32 or int64, got {indices.dtype}")
    _check_attrs(kind, int(bits), int(block_size))
    g = _axis(gather_axis, data.ndim, "gather_axis")
    qa = _axis(quantize_axis, data.ndim, "quantize_axis")
    per = 8 // int(bits) if kind == "uint8" else 1
    if kind == "uint8" and (g != 0 or qa != data.ndim - 1 or g == qa):
        raise InvalidArgument(
            f"{WHAT}: uint8 data needs gather_axis 0 and quantize_axis the last axis, different from "
            f"each other; got gather_axis={g}, quantize_axis={qa} for rank {data.ndim}"
        )
    zp = None if zero_points is None else np.asarray(zero_points)
    _check_tables(data, scales, zp, kind, qa, per, int(block_size))
    dim = data.shape[qa] * per
    block = int(block_size) or max(dim, 1)

    n = data.shape[g]
    flat = indices.reshape(-1).astype(np.int64)
    bad = (flat < -n) | (flat >= n)
    rows = np.where(bad, 0, np.where(flat < 0, flat + n, flat))
    shape = list(data.shape)
    shape[qa] = dim
    out_shape = tuple(shape[:g]) + indices.shape + tuple(shape[g + 1 :])
    if n == 0 or flat.size == 0 or 0 in shape:
        return np.zeros(out_shape, scales.dtype)

    q = np.take(data, rows, axis=g)
    if kind == "fp":
        values = q.astype(F32)
    elif per > 1:
        values = _unpack(q, int(bits), dim)
    else:
        values = q.astype(np.int32)
    s = _per_element(scales, g, qa, rows, block, dim).astype(F32)
    if kind != "fp":
        if zp is None and kind == "uint8":
            values -= 1 << (int(bits) - 1)
        elif zp is not None:
            z = _unpack(zp, int(bits), scales.shape[qa]) if per > 1 else zp.astype(np.int32)
            values -= _per_element(z, g, qa, rows, block, dim)
        values = values.astype(F32)
    out = values * s
    if bad.any():
        out[(slice(None),) * g + (bad,)] = 0
    return out.astype(scales.dtype, copy=False).reshape(out_shape)


@shape_rule("GatherBlockQuantized", domain="com.microsoft")
def _shape(ctx) -> None:
    data, idx, elem = ctx.input_shape(0), ctx.input_shape(1), ctx.input_elem(2)
    if data is None or idx is None or not data:
        ctx.set_output(0, elem, None)
        return
    rank = len(data)
    g, qa = int(ctx.attr("gather_axis", 0)), int(ctx.attr("quantize_axis", 1))
    if not (-rank <= g < rank and -rank <= qa < rank):
        ctx.set_output(0, elem, None)
        return
    g, qa = g % rank, qa % rank
    dims = list(data)
    if ctx.input_elem(0) == 2:  # uint8: codes packed along the last (quantize) axis
        per = 8 // int(ctx.attr("bits", 4) or 4)
        dims[-1] = dims[-1] * per if isinstance(dims[-1], int) else None
    ctx.set_output(0, elem, dims[:g] + list(idx) + dims[g + 1 :])
