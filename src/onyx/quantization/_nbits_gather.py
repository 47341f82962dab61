"""Blockwise int4 quantization of a Gather's table (an embedding) for com.microsoft
``GatherBlockQuantized``, value for value as onnxruntime's ``MatMulNBitsQuantizer`` computes it.

The table keeps its shape; blocks of ``block_size`` run along ``quantize_axis`` (the last block may be
short). Unlike the MatMulNBits path (MLAS, float32, C's ``roundf``) onnxruntime quantizes tables with
numpy in the table's own type, rounding halves to even:

* symmetric (INT4): ``scale = v / -8`` where ``v`` is the block's min or max of larger magnitude,
  ``q = round(x / scale)`` clipped to [-8, 7] (0 where the scale is 0); no zero points;
* asymmetric (UINT4): the range widened to include 0, ``scale = (hi - lo) / 15``,
  ``zp = round(-lo / scale)`` and ``q = round(x / scale + zp)`` clipped to [0, 15] (8 for both where
  the scale is 0).
"""

from __future__ import annotations

import numpy as np


def _blocks(table: np.ndarray, axis: int, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(the table as (m, k, n), its (m, k_blocks, block, n) view padded by repeating each row's last
    element, which changes no block's min or max)."""
    shape = table.shape
    m = int(np.prod(shape[:axis], dtype=np.int64))
    k = shape[axis]
    n = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    x = table.reshape(m, k, n)
    kb = -(-k // block_size)
    pad = kb * block_size - k
    padded = np.pad(x, ((0, 0), (0, pad), (0, 0)), mode="edge") if pad else x
    return x, padded.reshape(m, kb, block_size, n)


def gather_int4_weights(
    table: np.ndarray, quantize_axis: int, block_size: int, symmetric: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(codes, scales, zero points or None): codes int8 in [-8, 7] (symmetric) or uint8 in [0, 15] of
    the table's shape; scales (in the table's type) and zero points (uint8) of the table's shape with
    ``ceil(dim / block_size)`` along ``quantize_axis`` (non-negative)."""
    dt = table.dtype
    x, blocks = _blocks(table, quantize_axis, block_size)
    hi, lo = blocks.max(axis=2), blocks.min(axis=2)  # (m, k_blocks, n)
    sshape = list(table.shape)
    sshape[quantize_axis] = hi.shape[1]

    def spread(per_block: np.ndarray) -> np.ndarray:  # (m, k_blocks, n) -> (m, k, n)
        return np.repeat(per_block, block_size, axis=1)[:, : x.shape[1]]

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if symmetric:
            big = np.where(np.abs(hi) > np.abs(lo), hi, lo)
            scales = (big / dt.type(-8.0)).astype(dt)
            s = spread(scales)
            q = np.where(s == 0, dt.type(0), x / s).round().clip(-8, 7).astype(np.int8)
            return q.reshape(table.shape), scales.reshape(sshape), None
        lo = np.minimum(lo, dt.type(0))
        hi = np.maximum(hi, dt.type(0))
        scales = ((hi - lo) / dt.type(15.0)).astype(dt)
        zp = np.where(scales == 0, dt.type(8), -lo / scales).round().clip(0, 15).astype(np.uint8)
        s, z = spread(scales), spread(zp)
        q = np.where(s == 0, dt.type(8), x / s + z).round().clip(0, 15).astype(np.uint8)
    return q.reshape(table.shape), scales.reshape(sshape), zp.reshape(sshape)
