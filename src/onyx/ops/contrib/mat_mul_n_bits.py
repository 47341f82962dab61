"""com.microsoft MatMulNBits: Y = A @ dequantize(B) (+ bias), B quantized to 2, 4 or 8 bits in blocks
of ``block_size`` along K (per output column): code ``q`` of block ``j`` of column ``n`` stands for
``(q - zero_point[n, j]) * scales[n, j]``; without zero points the mid value ``2**(bits-1)``.

Inputs: A (..., K) float; B (N, k_blocks, blob) uint8, codes packed lowest bits first; scales
(N, k_blocks); zero_points (packed uint8, or float like scales); g_idx (K,) int32 the block of each
row (act-order GPTQ models); bias (N,). The weight is dequantized to float32 once per node when B,
scales, zero_points and g_idx are initializers (``prepare``), then every run is one BLAS product.
``accuracy_level`` only lets onnxruntime trade accuracy for speed; onyx always computes in float32.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels.nbits import dequantize_nbits, matmul_nbits
from onyx.ops.contrib._common import back, threads_of
from onyx.ops.registry import op, shape_rule

WHAT = "MatMulNBits"


def _weight(B, scales, zero_points, g_idx, K, N, bits, block_size):  # noqa: N803
    """The float32 (N, K) weight, after checking the quantized inputs against the attributes."""
    if bits not in (2, 4, 8):
        raise InvalidArgument(f"{WHAT}: bits must be 2, 4 or 8, got {bits}")
    if K <= 0 or N <= 0:
        raise InvalidArgument(f"{WHAT}: attributes K and N must be positive, got K={K}, N={N}")
    if block_size < 16 or block_size & (block_size - 1):
        raise InvalidArgument(f"{WHAT}: block_size must be a power of two >= 16, got {block_size}")
    kb = -(-K // block_size)
    blob = block_size * bits // 8
    if B.dtype != np.uint8 or B.size != N * kb * blob:
        raise InvalidArgument(
            f"{WHAT}: B must be uint8 of shape ({N}, {kb}, {blob}) for K={K}, N={N}, bits={bits}, "
            f"block_size={block_size}; got {B.dtype} {B.shape}"
        )
    if scales.dtype.kind != "f" or scales.size != N * kb:
        raise InvalidArgument(
            f"{WHAT}: scales must be float of shape ({N}, {kb}), got {scales.dtype} {scales.shape}"
        )
    if zero_points is not None:
        if zero_points.dtype == np.uint8:
            want = N * (-(-kb * bits // 8))
        elif zero_points.dtype.kind == "f":
            want = N * kb
        else:
            raise InvalidArgument(f"{WHAT}: zero_points must be uint8 or float, got {zero_points.dtype}")
        if zero_points.size != want:
            raise InvalidArgument(
                f"{WHAT}: zero_points of {zero_points.dtype} must hold {want} values for N={N}, "
                f"k_blocks={kb}, bits={bits}; got shape {zero_points.shape}"
            )
    if g_idx is not None:
        g = np.asarray(g_idx).reshape(-1)
        if g.dtype.kind not in "iu" or g.size < K or (g.size and (g[:K].min() < 0 or g[:K].max() >= kb)):
            raise InvalidArgument(
                f"{WHAT}: g_idx must hold K={K} block indices in [0, {kb}), got {g_idx.shape}"
            )
    return dequantize_nbits(B, scales, zero_points, k=K, n=N, bits=bits, block_size=block_size, g_idx=g_idx)


def _run(A, w, bias, K, N, ctx):  # noqa: N803
    if A.ndim < 1 or A.shape[-1] != K:
        raise InvalidArgument(f"{WHAT}: A's last dim must be K={K}, got shape {A.shape}")
    if A.dtype.kind != "f":
        raise InvalidArgument(f"{WHAT}: A must be float, got {A.dtype}")
    if bias is not None and bias.size != N:
        raise InvalidArgument(f"{WHAT}: bias must have N={N} values, got shape {bias.shape}")
    return back(matmul_nbits(A, w, bias, threads=threads_of(ctx)), A.dtype)


def _prepare(*, K, N, bits=4, block_size, accuracy_level=0, _ctx=None, _constants=()):  # noqa: N803
    """Dequantize the weight once when B, scales, zero_points and g_idx are all initializers."""
    consts = tuple(_constants) + (None,) * (6 - len(_constants))
    b, s, zp, g = consts[1:5]
    if b is None or s is None:
        return None
    w = _weight(b, s, zp, g, K, N, bits, block_size)

    def run(A, B, scales, zero_points=None, g_idx=None, bias=None):  # noqa: N803
        if B is b and scales is s and zero_points is zp and g_idx is g:
            return _run(A, w, bias, K, N, _ctx)
        return mat_mul_n_bits(
            A, B, scales, zero_points, g_idx, bias, K=K, N=N, bits=bits, block_size=block_size, _ctx=_ctx
        )

    return run


@op("MatMulNBits", domain="com.microsoft", since=1, prepare=_prepare)
def mat_mul_n_bits(
    A,  # noqa: N803
    B,  # noqa: N803
    scales,
    zero_points=None,
    g_idx=None,
    bias=None,
    *,
    K,  # noqa: N803
    N,  # noqa: N803
    bits=4,
    block_size,
    accuracy_level=0,
    _ctx=None,
):
    w = _weight(B, scales, zero_points, g_idx, K, N, bits, block_size)
    return _run(A, w, bias, K, N, _ctx)


@shape_rule("MatMulNBits", domain="com.microsoft")
def _shape(ctx):
    a = ctx.input_shape(0)
    n = ctx.attr("N", None)
    dims = None if a is None or not a else [*a[:-1], int(n) if n is not None else None]
    ctx.set_output(0, ctx.input_elem(0), dims)
