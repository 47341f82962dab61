"""Helpers shared by the com.microsoft kernels: activations, row normalisation, attention."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops import _native
from onyx.ops.math._common import F32, NATIVE_FLOATS
from onyx.runtime import blas, team

_SQRT_HALF = math.sqrt(0.5)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


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


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) as a new array."""
    t = np.multiply(x, x)
    t *= 0.044715
    t += 1
    t *= x
    t *= _SQRT_2_PI
    np.tanh(t, out=t)
    t += 1
    t *= x
    t *= 0.5
    return t


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


def standardize_last(x: np.ndarray, epsilon: float, simplified: bool = False, ncols: int | None = None):
    """Normalise ``x`` (a native float array) over its trailing ``ncols`` elements (default: the last
    axis). Returns (y, mean or None, inv_std), statistics with the trailing dims kept as 1."""
    ncols = x.shape[-1] if ncols is None else ncols
    shape = x.shape
    rows = x.size // ncols if ncols else 0
    x2 = x.reshape(rows, ncols)
    if simplified:
        mean = None
        d = x2.copy()
    else:
        mean = x2.mean(axis=1, keepdims=True)
        d = x2 - mean
    var = np.square(d).mean(axis=1, keepdims=True) if ncols else np.zeros((rows, 1), x.dtype)
    var += x.dtype.type(epsilon)
    inv = np.sqrt(var, out=var)
    np.reciprocal(inv, out=inv)
    d *= inv
    return d.reshape(shape), mean, inv


def softmax_last_(s: np.ndarray) -> np.ndarray:
    """In-place softmax over the last axis. A row masked entirely with -inf gives zeros, not NaN: that is
    what the exporters' Where(IsNaN(p), 0, p) guard computes in the graphs these kernels are fused from."""
    m = np.max(s, axis=-1, keepdims=True)
    dead = np.isneginf(m)
    if dead.any():
        m[dead] = 0.0
    s -= m
    np.exp(s, out=s)
    total = np.sum(s, axis=-1, keepdims=True)
    if dead.any():
        total[dead] = 1.0
    s /= total
    return s


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


def attend(q, k, v, scale, bias, what: str, want_qk: bool = False):
    """softmax(q @ k^T * scale + bias) @ v for (B, N, S, H) q and (B, N, T, H) k, v.

    Returns ((B, S, N*Hv) output, the scaled scores before the softmax when ``want_qk`` else None)."""
    scores = _stacked(q, np.swapaxes(k, -1, -2))
    if (
        not want_qk
        and scores.dtype == F32
        and scores.ndim == 4
        and scores.size >= SOFTMAX_JIT_MIN
        and scores.flags.c_contiguous
        and _native.available()
    ):
        _softmax_native(scores, scale, bias, what)
        return _merge_heads(_stacked(scores, v)), None
    scores *= scores.dtype.type(scale)
    if bias is not None:
        try:
            scores += bias
        except ValueError:
            raise InvalidArgument(
                f"{what}: attention bias/mask {bias.shape} does not broadcast to the scores {scores.shape}"
            ) from None
    qk = scores.copy() if want_qk else None
    softmax_last_(scores)
    return _merge_heads(_stacked(scores, v)), qk


def _stacked(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` over the heads: one batch GEMM where BLAS has it (blas.matmul_stack), else numpy."""
    y = blas.matmul_stack(a, b)
    return blas.matmul(a, b) if y is None else y


def _merge_heads(out: np.ndarray) -> np.ndarray:
    """(B, N, S, H) -> (B, S, N*H)."""
    b, n, s, h = out.shape
    return out.transpose(0, 2, 1, 3).reshape(b, s, n * h)


#: attention scores from which the softmax runs in the compiled loop of the ``perf`` extra (a
#: transformer layer at sequence 128 has 12 * 128 * 128)
SOFTMAX_JIT_MIN = 1 << 13
#: scores from which that loop splits its rows over threads
_SOFTMAX_PARALLEL = 1 << 16


def _softmax_native(scores: np.ndarray, scale: float, bias: np.ndarray | None, what: str) -> None:
    """In place: softmax(scores * scale + bias) over the last axis of the float32, C-contiguous (B, N,
    S, T) scores by the compiled softmax_rows (its team task, run from cached machine code:
    onyx.ops._native), rows over threads from ``_SOFTMAX_PARALLEL`` scores."""
    bb = scores if bias is None else _bias_rows(bias, scores.shape, what)
    rows = scores.size // scores.shape[-1] if scores.shape[-1] else 0
    scale_bits = int(np.array(scale, dtype=F32).view(np.int32))
    params = np.array(
        [0, *scores.shape, scores.ctypes.data, bb.ctypes.data, *bb.shape, bias is not None, scale_bits],
        np.int64,
    )
    address = _native.task("onyx.ops.math._jit", "_softmax_rows_task")
    team.run_rows(address, params, rows, scores.size >= _SOFTMAX_PARALLEL)


def _bias_rows(bias: np.ndarray, shape: tuple, what: str) -> np.ndarray:
    """``bias`` as the compiled softmax reads it: float32, 4-D, C-contiguous, its last axis the scores'
    and each other axis 1 or the scores' (so each row it reads is one contiguous vector)."""
    b = np.asarray(bias, dtype=F32)
    if b.ndim > 4 or any(d not in (1, want) for d, want in zip(b.shape[::-1], shape[::-1])):
        raise InvalidArgument(
            f"{what}: attention bias/mask {bias.shape} does not broadcast to the scores {shape}"
        )
    b = b.reshape((1,) * (4 - b.ndim) + b.shape)
    if b.shape[-1] != shape[-1]:
        b = np.broadcast_to(b, b.shape[:-1] + (shape[-1],))
    return np.ascontiguousarray(b)


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
