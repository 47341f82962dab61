"""com.microsoft MatMulBnb4: MatMul with a weight quantized to 4 bits in bitsandbytes' FP4 or NF4 code
(QLoRA), one absmax scale per ``block_size`` values of the flattened [N, K] weight, two codes a byte
(the first in the high nibble). The weight is dequantized once per session (``prepare``).

Only ``transB=1`` (inference) is implemented: for ``transB=0`` (a training path) onnxruntime's CPU
kernel gives results that match no layout of the dequantized weight its own documentation allows."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.kernels import blas
from onyx.ops.registry import op, shape_rule

#: bitsandbytes' code books: the value of each 4-bit code, before the block's absmax scale
FP4 = np.array(
    [0.0, 0.0052083333, 0.6666667, 1.0, 0.3333333, 0.5, 0.1666667, 0.25]
    + [-0.0, -0.0052083333, -0.6666667, -1.0, -0.3333333, -0.5, -0.1666667, -0.25],
    dtype=np.float32,
)
NF4 = np.array(
    [
        -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
        -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
        0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
        0.7229568362236023, 1.0,
    ],
    dtype=np.float32,
)  # fmt: skip


def dequantize(B, absmax, *, N: int, K: int, block_size: int, quant_type: int) -> np.ndarray:  # noqa: N803
    """The [N, K] float32 weight."""
    if quant_type not in (0, 1):
        raise InvalidArgument(f"MatMulBnb4: quant_type must be 0 (FP4) or 1 (NF4), got {quant_type}")
    if block_size < 16 or block_size & (block_size - 1):
        raise InvalidArgument(f"MatMulBnb4: block_size must be a power of 2, at least 16, got {block_size}")
    b = np.asarray(B).reshape(-1)
    n = N * K
    if b.dtype != np.uint8 or b.size != (n + 1) // 2:
        raise InvalidArgument(
            f"MatMulBnb4: B must be uint8 [{(n + 1) // 2}] for N={N}, K={K}, got {b.dtype} {b.shape}"
        )
    scales = np.asarray(absmax, dtype=np.float32).reshape(-1)
    blocks = (n + block_size - 1) // block_size
    if scales.size != blocks:
        raise InvalidArgument(f"MatMulBnb4: absmax must hold {blocks} values, got {scales.size}")
    codes = np.empty(2 * b.size, dtype=np.uint8)
    codes[0::2] = b >> 4
    codes[1::2] = b & 0x0F
    book = NF4 if quant_type == 1 else FP4
    values = book[codes[:n]] * np.repeat(scales, block_size)[:n]
    return values.reshape(N, K)


def _prepare(*, K, N, block_size, quant_type, transB=1, training_mode=0, _constants=None):  # noqa: N803
    weight = None
    if _constants is not None and _constants[1] is not None and _constants[2] is not None:
        weight = dequantize(
            _constants[1], _constants[2], N=N, K=K, block_size=block_size, quant_type=quant_type
        )
        frozen_b, frozen_scales = _constants[1], _constants[2]

    def run(A, B, absmax):  # noqa: N803
        w = weight if weight is not None and B is frozen_b and absmax is frozen_scales else None
        if w is None:
            w = dequantize(B, absmax, N=N, K=K, block_size=block_size, quant_type=quant_type)
        return _matmul(A, w, K, transB)

    return run


def _matmul(A, w: np.ndarray, K: int, trans_b: int) -> np.ndarray:  # noqa: N803
    if not trans_b:
        raise OnyxNotImplemented("MatMulBnb4: transB=0 (the training path) is not implemented")
    a = np.asarray(A)
    if a.dtype not in (np.float32, np.float16):
        raise InvalidArgument(f"MatMulBnb4: A must be float or float16, got {a.dtype}")
    rhs = w.T if trans_b else w
    if a.ndim < 1 or a.shape[-1] != rhs.shape[0]:
        raise InvalidArgument(
            f"MatMulBnb4: A {a.shape} does not fit the dequantized weight {w.shape} (transB={trans_b})"
        )
    y = blas.matmul(a.astype(np.float32, copy=False), rhs)
    return np.asarray(y).astype(a.dtype, copy=False)


@op("MatMulBnb4", domain="com.microsoft", since=1, prepare=_prepare)
def mat_mul_bnb4(A, B, absmax, *, K, N, block_size, quant_type, transB=1, training_mode=0):  # noqa: N803
    w = dequantize(B, absmax, N=N, K=K, block_size=block_size, quant_type=quant_type)
    return _matmul(A, w, K, transB)


@shape_rule("MatMulBnb4", domain="com.microsoft")
def _shape(ctx) -> None:
    a = ctx.input_shape(0)
    n = ctx.attr("N") if ctx.attr("transB", 1) else ctx.attr("K")
    ctx.set_output(0, ctx.input_elem(0), None if a is None else list(a[:-1]) + [n])
