"""Attention's softmax: softmax(scores * scale (+ bias)) over the last axis, in place.

The compiled path (``_softmax.c``, float32 scores of rank up to 4) folds the scale and the bias into
the softmax's own passes; the numpy path below is the reference it is tested against and runs for
other types, ranks and builds. Both give zeros for a row whose largest value is -inf (a fully masked
row: what the exporters' Where(IsNaN(p), 0, p) guard computes in the graphs these kernels are fused
from) and NaN for a row holding NaN or +inf.
"""

from __future__ import annotations

import numpy as np

from onyx.kernels import _loader, _threads

__all__ = ["softmax_rows", "softmax_rows_numpy"]

#: Scores from which the compiled loop splits its rows over threads.
PARALLEL_MIN = 1 << 16


def softmax_rows(
    scores: np.ndarray, *, scale: float = 1.0, bias: np.ndarray | None = None, threads: int = 0
) -> np.ndarray:
    """In place: ``scores`` = softmax(scores * scale (+ ``bias``, which must broadcast to the scores))
    over the last axis. Returns ``scores``. Raises ValueError when the bias does not broadcast."""
    mod = _loader.compiled("_softmax")
    if mod is None or scores.dtype != np.float32 or not 1 <= scores.ndim <= 4 or not scores.size:
        return softmax_rows_numpy(scores, scale=scale, bias=bias)
    s4 = scores.reshape((1,) * (4 - scores.ndim) + scores.shape)
    work = s4 if s4.flags.c_contiguous else np.ascontiguousarray(s4)  # s4 is a view of the scores
    b4 = None
    if bias is not None:
        b = np.asarray(bias, dtype=np.float32)
        if b.ndim > scores.ndim:
            raise ValueError(f"bias {b.shape} does not broadcast to the scores {scores.shape}")
        b = b.reshape((1,) * (4 - b.ndim) + b.shape)
        if b.shape[-1] != s4.shape[-1] or not b.flags.c_contiguous:
            # the kernel reads each bias row as a contiguous vector
            b = np.ascontiguousarray(np.broadcast_to(b, b.shape[:-1] + s4.shape[-1:]))
        b4 = np.broadcast_to(b, s4.shape)  # ValueError when it does not fit
    n = _threads.resolve(threads) if scores.size >= PARALLEL_MIN else 1
    mod.softmax_rows(work, float(scale), b4, n)
    if work is not s4:
        s4[...] = work
    return scores


def softmax_rows_numpy(
    scores: np.ndarray, *, scale: float = 1.0, bias: np.ndarray | None = None
) -> np.ndarray:
    """:func:`softmax_rows` by numpy (same contract): the reference of the compiled path."""
    scores *= scores.dtype.type(scale)
    if bias is not None:
        scores += bias
    if not scores.size:
        return scores
    m = np.max(scores, axis=-1, keepdims=True)
    dead = np.isneginf(m)
    if dead.any():
        m[dead] = 0.0
    scores -= m
    np.exp(scores, out=scores)
    total = np.sum(scores, axis=-1, keepdims=True)
    if dead.any():
        total[dead] = 1.0
    scores /= total
    return scores
