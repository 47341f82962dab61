"""Blockwise n-bit weight quantization and packing, bit-for-bit as onnxruntime lays it out.

Two layouts exist, and the tests compare both with onnxruntime's bytes:

* com.microsoft ``MatMulNBits`` (QOperator): the weight (K, N) is quantized per column in blocks of
  ``block_size`` along K (K padded up to a whole block). ``B`` is (N, k_blocks, blob) uint8, each
  byte holding ``8 // bits`` values, the lowest bits first; ``scales`` is (N, k_blocks); zero points
  are (N, ceil(k_blocks * bits / 8)) uint8 packed the same way, the unused slots set to the mid value
  (``1 << (bits - 1)``).
* opset-21 blockwise ``DequantizeLinear`` (QDQ, 4 bits only): the weight keeps its (K, N) shape as an
  INT4 (symmetric) or UINT4 tensor, packed two to a byte in row-major order; scales and zero points
  are (k_blocks, N).

The arithmetic follows MLAS's blockwise quantizer in float32: asymmetric blocks take
``scale = (max(hi, 0) - min(lo, 0)) / qmax`` and ``zp = roundf(-lo / scale)``; symmetric ones take the
value of largest magnitude (with its sign) over ``-mid``; values are ``roundf(v * (1 / scale) + zp)``
clamped, where ``roundf`` rounds halves away from zero (numpy's ``rint`` rounds them to even).
"""

from __future__ import annotations

import numpy as np

F32 = np.float32


def round_half_away(x: np.ndarray) -> np.ndarray:
    """C's ``roundf`` on float32: halves away from zero (exact: ``x - trunc(x)`` is exact in float)."""
    t = np.trunc(x)
    frac = x - t
    return t + np.where(np.abs(frac) >= F32(0.5), np.sign(x), F32(0)).astype(x.dtype)


def _blocks(weight: np.ndarray, block_size: int) -> np.ndarray:
    """(K, N) -> (N, k_blocks, block_size) float32, K zero-padded to whole blocks."""
    k, n = weight.shape
    kb = -(-k // block_size)
    w = np.zeros((kb * block_size, n), F32)
    w[:k] = weight
    return np.ascontiguousarray(w.T).reshape(n, kb, block_size)


def quantize_blocks(
    weight: np.ndarray,
    bits: int,
    block_size: int,
    symmetric: bool,
    *,
    qdq: bool = False,
    scale_dtype: np.dtype | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quantize a float (K, N) weight per column in blocks along K.

    Returns (q, scales, zero_points): q (N, k_blocks, block_size) uint8 in [0, 2**bits) (the padded
    tail of the last block is 0), scales (N, k_blocks) of ``scale_dtype`` (default float32; the values
    are quantized with the scale rounded to that type, as MLAS reads it back), zero points (N, k_blocks) uint8
    (``mid`` for symmetric blocks). The stored value ``q`` dequantizes as ``(q - zp) * scale``.
    onnxruntime rounds ``v / scale + zp`` for MatMulNBits but adds the zero point after rounding
    ``v / scale`` for QDQ (``qdq=True``): the two differ on ties below zero.
    """
    k = weight.shape[0]
    qmax = (1 << bits) - 1
    mid = 1 << (bits - 1)
    w = _blocks(np.asarray(weight, F32), block_size)
    if symmetric:
        hi, lo = w.max(axis=2), w.min(axis=2)
        big = np.where(np.abs(hi) > np.abs(lo), hi, lo)
        # an all-zero block: MLAS's scan keeps its first element, whose sign the scale's zero takes
        big = np.where(big == 0, w[:, :, 0], big)
        scales = (-big / F32(mid)).astype(F32)
        zp = np.full(scales.shape, mid, np.uint8)
    else:
        lo = np.minimum(w.min(axis=2), F32(0))
        hi = np.maximum(w.max(axis=2), F32(0))
        scales = ((hi - lo) / F32(qmax)).astype(F32)
        with np.errstate(divide="ignore", invalid="ignore"):
            zfp = np.where(scales != 0, F32(0) - lo / np.where(scales != 0, scales, F32(1)), lo).astype(F32)
        zp = np.clip(round_half_away(zfp), 0, qmax).astype(np.uint8)
    if scale_dtype is not None and np.dtype(scale_dtype) != scales.dtype:
        scales = scales.astype(scale_dtype)
    used = scales.astype(F32)
    with np.errstate(divide="ignore"):
        recip = np.where(used != 0, F32(1) / np.where(used != 0, used, F32(1)), F32(0)).astype(F32)
    v = w * recip[:, :, None]
    if qdq:
        v = round_half_away(v) + zp[:, :, None].astype(F32)
    else:
        v += zp[:, :, None].astype(F32)
    q = np.clip(round_half_away(v), 0, qmax).astype(np.uint8)
    pad = q.shape[1] * block_size - k
    if pad:
        q[:, -1, block_size - pad :] = 0
    return q, scales, zp


def pack_bits(values: np.ndarray, bits: int, fill: int = 0) -> np.ndarray:
    """Pack the last axis of uint8 ``values`` (each < 2**bits) ``8 // bits`` to a byte, the lowest bits
    first; a short last byte is completed with ``fill``."""
    per = 8 // bits
    v = np.asarray(values, np.uint8)
    n = v.shape[-1]
    m = -(-n // per)
    if m * per != n:
        tail = np.full(v.shape[:-1] + (m * per - n,), fill, np.uint8)
        v = np.concatenate([v, tail], axis=-1)
    v = v.reshape(v.shape[:-1] + (m, per))
    out = np.zeros(v.shape[:-1], np.uint8)
    for j in range(per):
        out |= (v[..., j] << np.uint8(j * bits)).astype(np.uint8)
    return out


def unpack_bits(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """Inverse of :func:`pack_bits`: the first ``count`` values of the last axis, as uint8."""
    per = 8 // bits
    p = np.asarray(packed, np.uint8)
    mask = np.uint8((1 << bits) - 1)
    out = np.empty(p.shape + (per,), np.uint8)
    for j in range(per):
        np.bitwise_and(p >> np.uint8(j * bits), mask, out=out[..., j])
    return out.reshape(p.shape[:-1] + (p.shape[-1] * per,))[..., :count]


def matmul_nbits_weights(
    weight: np.ndarray, bits: int, block_size: int, symmetric: bool, scale_dtype: np.dtype | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """MatMulNBits's (B, scales, zero_points) for a float (K, N) weight; zero_points is None when
    symmetric (the op's default zero point is the mid value)."""
    q, scales, zp = quantize_blocks(weight, bits, block_size, symmetric, scale_dtype=scale_dtype)
    _copy_tail_slots(q, np.shape(weight)[0], bits, block_size)
    b = pack_bits(q, bits)
    return b, scales, None if symmetric else pack_bits(zp, bits, fill=1 << (bits - 1))


def _copy_tail_slots(q: np.ndarray, k: int, bits: int, block_size: int) -> None:
    """Fill the unused slots of the byte holding row K-1 as onnxruntime leaves them.

    MLAS packs ``8 // bits`` rows per byte in a loop over a tile of ``per * block_size`` rows whose
    value buffer starts at 0 and is not cleared between bytes: the slots past K repeat those of the
    byte before in the same tile (0 when the byte opens the tile). Never read; kept for equal bytes."""
    per = 8 // bits
    start = (k - 1) // per * per  # first row of the last byte
    if k - start == per or per == 1:
        return
    flat = q.reshape(q.shape[0], -1)
    for slot in range(k - start, per):
        if start % (per * block_size):
            flat[:, start + slot] = flat[:, start - per + slot]
        else:
            flat[:, start + slot] = 0


def qdq_int4_weights(
    weight: np.ndarray, block_size: int, symmetric: bool, scale_dtype: np.dtype | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """Blockwise DequantizeLinear's (packed data, scales, packed zero points or None, element type) for
    a float (K, N) weight: INT4 (type 22) when symmetric, else UINT4 (type 21)."""
    k, n = np.shape(weight)
    q, scales, zp = quantize_blocks(weight, 4, block_size, symmetric, qdq=True, scale_dtype=scale_dtype)
    rows = q.reshape(n, -1)[:, :k].T  # (K, N), stored values
    if symmetric:  # signed two's-complement nibbles: q - 8
        rows = (rows.astype(np.int16) - 8).astype(np.uint8) & np.uint8(0x0F)
        return pack_bits(rows.reshape(-1), 4), np.ascontiguousarray(scales.T), None, 22
    zps = np.ascontiguousarray(zp.T).reshape(-1)
    return pack_bits(rows.reshape(-1), 4), np.ascontiguousarray(scales.T), pack_bits(zps, 4), 21
