"""Round-to-nearest weight quantization for MatMulNBits, as onnxruntime's ``RTN`` algorithm (its port
of Intel Neural Compressor's) computes it: per block of ``group_size`` rows of one column, in float64,
numpy's half-to-even rounding, with an optional clip ``ratio`` applied to the block's min and max.

Differences from the DEFAULT (MLAS) algorithm, kept because they change the bytes: the asymmetric
range is not widened to include 0, the zero rows padding K to a whole block count in the min/max,
a symmetric block spans ``2 * max|w|`` over 15 steps around the zero point 8, and a block with
min == max (or all zero) gets scale 1.
"""

from __future__ import annotations

import numpy as np

from onyx.quantization._nbits_pack import pack_bits


def rtn_matmul_nbits_weights(
    weight: np.ndarray, bits: int, group_size: int, symmetric: bool, ratio: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """MatMulNBits's (B, scales (float32), zero_points or None when symmetric) for a float32 (K, N)
    weight; ``group_size`` 0 means one block per column."""
    k, n = weight.shape
    gs = group_size or k
    kb = -(-k // gs)
    padded = np.zeros((kb * gs, n), np.float32)
    padded[:k] = weight
    data = np.ascontiguousarray(padded.T).reshape(-1, gs)  # rows: (column, block)
    maxq = (1 << bits) - 1
    rmin = data.min(axis=1, keepdims=True) * np.float32(ratio)
    rmax = data.max(axis=1, keepdims=True) * np.float32(ratio)
    scale = np.ones(rmax.shape, np.float64)
    if symmetric:
        span = np.maximum(np.abs(rmin), np.abs(rmax))
        mask = span > 0
        scale[mask] = (span[mask] * np.float32(2.0)).astype(np.float64) / maxq
        zp = np.full(rmax.shape, 1 << (bits - 1), np.uint8)
    else:
        mask = rmin != rmax
        scale[mask] = (rmax - rmin)[mask].astype(np.float64) / maxq
        zp = np.clip(np.round((0.0 - rmin.astype(np.float64)) / scale), 0, maxq).astype(np.uint8)
    q = data / scale
    q += zp
    np.round(q, out=q)
    np.clip(q, 0, maxq, out=q)
    q = q.astype(np.uint8).reshape(n, kb, gs)
    scales = scale.reshape(n, kb).astype(np.float32)
    return pack_bits(q, bits), scales, None if symmetric else pack_bits(zp.reshape(n, kb), bits, fill=8)
