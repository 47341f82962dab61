"""Helpers shared by the com.microsoft kernels: types, activations, attention, shape rules."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels import blas
from onyx.kernels.softmax import softmax_rows
from onyx.ops.math._common import F32, NATIVE_FLOATS


def to_compute(x: np.ndarray) -> np.ndarray:
    """``x`` in a type numpy computes fast (float16/bfloat16/... go to float32)."""
    return x if x.dtype in NATIVE_FLOATS else x.astype(F32)


def back(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return y if y.dtype == dtype else y.astype(dtype)


def sigmoid_(y: np.ndarray) -> np.ndarray:
    """In-place logistic sigmoid of the float array ``y``."""
    with np.errstate(over="ignore"):
        np.negative(y, out=y)
        np.exp(y, out=y)
    y += 1
    np.reciprocal(y, out=y)
    return y


def activate_(y: np.ndarray, name: str, params: list[float], what: str) -> np.ndarray:
    """Apply the activation ``name`` (ONNX op name) with ``params`` to the float array ``y``, in place
    where possible; returns the result."""
    if name == "Relu":
        return np.maximum(y, 0, out=y)
    if name == "Sigmoid":
        return sigmoid_(y)
    if name == "Tanh":
        return np.tanh(y, out=y)
    if name == "LeakyRelu":
        alpha = params[0] if params else 0.01
        neg = np.minimum(y, 0)
        neg *= alpha
        np.maximum(y, 0, out=y)
        y += neg
        return y
    if name == "Clip":
        lo = params[0] if len(params) > 0 else -np.inf
        hi = params[1] if len(params) > 1 else np.inf
        return np.clip(y, lo, hi, out=y)
    if name == "HardSigmoid":
        alpha = params[0] if len(params) > 0 else 0.2
        beta = params[1] if len(params) > 1 else 0.5
        y *= alpha
        y += beta
        return np.clip(y, 0, 1, out=y)
    if name == "Elu":
        alpha = params[0] if params else 1.0
        neg = np.minimum(y, 0)
        np.expm1(neg, out=neg)
        neg *= alpha
        np.maximum(y, 0, out=y)
        y += neg
        return y
    if name == "Softplus":
        return np.logaddexp(y, 0, out=y)
    if name == "Softsign":
        d = np.abs(y)
        d += 1
        y /= d
        return y
    raise InvalidArgument(f"{what}: unsupported activation {name!r}")


def threads_of(ctx) -> int:
    """The threads a kernel may use in the run ``ctx`` (a KernelContext or None): 0 is the default."""
    return ctx.intra_op_num_threads if ctx is not None else 0


def expect_bias_of(x: np.ndarray, bias: np.ndarray | None, what: str) -> None:
    """Raises InvalidArgument unless ``bias`` (None: no bias) broadcasts to ``x`` without growing it."""
    if bias is None:
        return
    try:
        fits = np.broadcast_shapes(x.shape, bias.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise InvalidArgument(f"{what}: bias {bias.shape} does not broadcast to the input {x.shape}")


def heads(x: np.ndarray, n: int, what: str) -> np.ndarray:
    """(B, S, N*H) -> (B, N, S, H)."""
    b, s, d = x.shape
    if d % n:
        raise InvalidArgument(f"{what}: hidden size {d} is not a multiple of num_heads {n}")
    return x.reshape(b, s, n, d // n).transpose(0, 2, 1, 3)


def heads_of_transposed(xt: np.ndarray, n: int, batch: int, what: str) -> np.ndarray:
    """(N*H, B*S), a projection computed transposed -> (B, N, S, H), a view."""
    d, rows = xt.shape
    if d % n:
        raise InvalidArgument(f"{what}: hidden size {d} is not a multiple of num_heads {n}")
    return xt.reshape(n, d // n, batch, rows // batch).transpose(2, 0, 3, 1)


def attend(q, k, v, scale, bias, what: str, want_qk: bool = False, threads: int = 0):
    """softmax(q @ k^T * scale + bias) @ v for (B, N, S, H) q and (B, N, T, H) k, v.

    Returns ((B, S, N*Hv) output, the scaled scores before the softmax when ``want_qk`` else None)."""
    scores = _stacked(q, np.swapaxes(k, -1, -2))
    if bias is not None:
        shape = np.shape(bias)
        try:
            if np.broadcast_shapes(shape, scores.shape) != scores.shape:
                raise ValueError
        except ValueError:
            raise InvalidArgument(
                f"{what}: attention bias/mask {shape} does not broadcast to the scores {scores.shape}"
            ) from None
    qk = None
    if want_qk:
        scores *= scores.dtype.type(scale)
        if bias is not None:
            scores += bias
        qk = scores.copy()
        scale, bias = 1.0, None
    softmax_rows(scores, scale=scale, bias=bias, threads=threads)
    return _merge_heads(_stacked(scores, v)), qk


def _stacked(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` over the heads: one batch GEMM where BLAS has it (blas.matmul_stack), else numpy."""
    y = blas.matmul_stack(a, b)
    return blas.matmul(a, b) if y is None else y


def _merge_heads(out: np.ndarray) -> np.ndarray:
    """(B, N, S, H) -> (B, S, N*H)."""
    b, n, s, h = out.shape
    return out.transpose(0, 2, 1, 3).reshape(b, s, n * h)


def key_mask_bias(mask, batch, s, t, past, filter_value, dtype, what: str):
    """The additive (B or 1, 1, S, T) bias for a mask_index / key_padding_mask in one of its forms:
    (B) key lengths, (2B) end and start positions, (B, T), (B, S, T) 0/1 masks, (B, 1, M, M)."""
    if mask is None:
        return None
    m = np.asarray(mask)
    cols = np.arange(t)
    if m.ndim == 1 and m.shape[0] == batch:
        keep = cols[None, :] < m.astype(np.int64)[:, None]
        keep = keep[:, None, None, :]
    elif m.ndim == 1 and m.shape[0] == 2 * batch:
        end = m[:batch].astype(np.int64)[:, None]
        start = m[batch:].astype(np.int64)[:, None]
        keep = ((cols[None, :] < end) & (cols[None, :] >= start))[:, None, None, :]
    elif m.ndim == 2 and m.shape == (batch, t):
        keep = (m != 0)[:, None, None, :]
    elif m.ndim == 3 and m.shape == (batch, s, t):
        keep = (m != 0)[:, None, :, :]
    elif (
        m.ndim == 4 and m.shape[0] == batch and m.shape[1] == 1 and m.shape[2] >= past + s and m.shape[3] >= t
    ):
        keep = m[:, :, past : past + s, :t] != 0
    else:
        raise InvalidArgument(
            f"{what}: mask of shape {m.shape} fits none of the supported forms "
            f"(batch {batch}, sequence {s}, total sequence {t})"
        )
    out = np.zeros(keep.shape, dtype)
    out[~keep] = filter_value
    return out


def causal_bias(s, t, filter_value, dtype):
    """(1, 1, S, T): query i (at position t - s + i) sees keys j <= t - s + i."""
    past = t - s
    rows = np.arange(s)[:, None] + past
    out = np.zeros((s, t), dtype)
    out[np.arange(t)[None, :] > rows] = filter_value
    return out[None, None]


def add_bias(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def rule_like_input0(ctx, outputs=(0,)) -> None:
    """Shape rule: the listed outputs have input 0's type and shape."""
    for i in outputs:
        if i < ctx.num_outputs:
            ctx.set_output(i, ctx.input_elem(0), ctx.input_shape(0))


def rule_stats(ctx, outputs) -> None:
    """Shape rule: per-row float32 statistics, input 0's shape with the last dim 1."""
    s = ctx.input_shape(0)
    for i in outputs:
        if i < ctx.num_outputs:
            ctx.set_output(i, 1, None if s is None else s[:-1] + [1])
