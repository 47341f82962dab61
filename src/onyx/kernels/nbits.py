"""Blockwise n-bit weights (com.microsoft MatMulNBits) unpacked to float32 for BLAS.

A MatMulNBits weight is dequantized once per session (the op caches it per node) and multiplied
with BLAS: on these machines a float32 GEMM runs at 100+ GFLOP/s while any numpy loop that
dequantizes inside the product would be memory-bound, so paying the float32 copy's memory buys the
speed (see bench/README.md for the figures against onnxruntime).
"""

from __future__ import annotations

import numpy as np

from onyx.kernels import blas
from onyx.kernels.products import product

F32 = np.float32


def unpack_codes(b: np.ndarray, bits: int, count: int) -> np.ndarray:
    """The ``count`` first ``bits``-wide codes of each row of the uint8 array ``b`` (rows, bytes),
    lowest bits first, as uint8 (rows, count)."""
    if bits == 8:
        return b[:, :count]
    per = 8 // bits
    mask = np.uint8((1 << bits) - 1)
    out = np.empty((b.shape[0], b.shape[1], per), np.uint8)
    for j in range(per):
        np.bitwise_and(b >> np.uint8(j * bits), mask, out=out[:, :, j])
    return out.reshape(b.shape[0], -1)[:, :count]


def pack_codes(codes: np.ndarray, bits: int, fill: int = 0) -> np.ndarray:
    """Inverse of :func:`unpack_codes`: the last axis of uint8 ``codes`` packed ``8 // bits`` to a
    byte, lowest bits first, a short last byte completed with ``fill``."""
    per = 8 // bits
    c = np.asarray(codes, np.uint8)
    extra = -c.shape[-1] % per
    if extra:
        c = np.concatenate([c, np.full(c.shape[:-1] + (extra,), fill, np.uint8)], axis=-1)
    c = c.reshape(c.shape[:-1] + (-1, per))
    out = c[..., 0].copy()
    for j in range(1, per):
        out |= c[..., j] << np.uint8(j * bits)
    return out


def dequantize_nbits(
    b: np.ndarray,
    scales: np.ndarray,
    zero_points: np.ndarray | None,
    *,
    k: int,
    n: int,
    bits: int,
    block_size: int,
    g_idx: np.ndarray | None = None,
) -> np.ndarray:
    """The float32 weight (K, N), laid out as onyx.runtime.repack lays out MatMul's weights (stored
    transposed where the BLAS runs that faster), of MatMulNBits inputs checked for shape: ``b``
    (N, k_blocks, blob) uint8, ``scales`` (N, k_blocks), ``zero_points`` None (mid value), packed
    uint8 (N, ceil(k_blocks * bits / 8)) or float (N, k_blocks); ``g_idx`` (K,) the block of each
    row."""
    kb = -(-k // block_size)
    mid = float(1 << (bits - 1))
    s = np.asarray(scales, F32).reshape(n, kb)
    if zero_points is None:
        zp = None
    elif zero_points.dtype == np.uint8:
        zp = unpack_codes(zero_points.reshape(n, -1), bits, kb).astype(F32)
    else:
        zp = np.asarray(zero_points, F32).reshape(n, kb)
    codes = unpack_codes(b.reshape(n, -1), bits, kb * block_size)
    if g_idx is None:
        w = codes.astype(F32).reshape(n, kb, block_size)
        if zp is None:
            w -= F32(mid)
        else:
            w -= zp[:, :, None]
        w *= s[:, :, None]
        return _as_weight(w.reshape(n, kb * block_size)[:, :k])
    g = np.asarray(g_idx, np.int64).reshape(-1)[:k]
    w = codes[:, :k].astype(F32)
    w -= F32(mid) if zp is None else zp[:, g]
    w *= s[:, g]
    return _as_weight(w)


def _as_weight(w_nk: np.ndarray) -> np.ndarray:
    """The (K, N) weight from the dequantized (N, K) rows: their transposed view (F-contiguous) where
    transposed weights pay, else a C-contiguous copy; the same layout a float MatMul weight gets."""
    if blas.transposed_weights_pay():
        return np.ascontiguousarray(w_nk).T
    return np.ascontiguousarray(w_nk.T)


def matmul_nbits(a: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, threads: int = 0) -> np.ndarray:
    """``a @ w (+ bias)`` in float32 for ``a`` (..., K) and the dequantized (K, N) weight: the product
    MatMul runs for a float weight (onyx.kernels.products picks the BLAS call for the shape)."""
    a32 = a if a.dtype == F32 else a.astype(F32)
    k, n = w.shape
    y = product(a32, w, a32.size // max(k, 1) * n * k, threads=threads)
    if bias is not None:
        y += np.asarray(bias, F32)
    return y
