"""Shared standardisation over trailing axes (LayerNormalization, GroupNormalization, ...)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.runtime import team

_STASH = {
    1: np.dtype(np.float32),
    11: np.dtype(np.float64),
    10: np.dtype(np.float32),
    16: np.dtype(np.float32),
}


def stash_dtype(stash_type: int, x_dtype: np.dtype) -> np.dtype:
    if x_dtype == np.float64:
        return np.dtype(np.float64)
    if stash_type not in _STASH:
        raise InvalidArgument(f"stash_type {stash_type} is not a supported element type")
    return _STASH[stash_type]


def standardize_rows(x2: np.ndarray, epsilon: float, row_scale=None, row_bias=None):
    """Rows of the 2-D ``x2`` to zero mean and unit variance: returns (normalized, mean, inv_std).

    ``row_scale`` / ``row_bias`` (shape (R, 1)) are folded into the same passes when given.

    The row sums go through BLAS (a matrix-vector product and batched dot products), which is several
    times faster than numpy's reductions over the last axis.
    """
    r, n = x2.shape
    dt = x2.dtype
    if n > 8192:
        # long rows: numpy's pairwise summation keeps float32 sums accurate
        mean = x2.mean(axis=1, keepdims=True)
        d = x2 - mean
        var = np.square(d).mean(axis=1, keepdims=True)
    else:
        ones = np.full((n, 1), 1.0 / n, dtype=dt)
        mean = np.matmul(x2, ones)  # (R, 1)
        d = x2 - mean
        var = np.matmul(d[:, None, :], d[:, :, None]).reshape(r, 1)
        var *= dt.type(1.0 / n)
    var += dt.type(epsilon)
    inv = np.sqrt(var, out=var)
    np.reciprocal(inv, out=inv)
    d *= inv if row_scale is None else inv * row_scale
    if row_bias is not None:
        d += row_bias
    return d, mean, inv


def norm_axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise InvalidArgument(f"{what}: axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


_JIT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def spans(v, tail: tuple) -> bool:
    """True when ``v`` holds one value per element of the trailing shape ``tail``, in its order (its
    shape is ``tail`` with any leading 1s), so that ``v.reshape(-1)`` lines up with a row."""
    if v is None:
        return True
    shape = tuple(v.shape)
    lead = len(shape) - len(tail)
    if lead < 0:
        shape = (1,) * -lead + shape
        lead = 0
    return shape[lead:] == tuple(tail) and all(d == 1 for d in shape[:lead])


def norm_rows_jit(x2, epsilon, gamma, beta=None, *, skip=None, bias=None, simplified=False, keep_sum=False):
    """Layer normalisation of the rows of ``x2`` (R, N) by the compiled loop of the ``perf`` extra:
    s = x2 (+ ``skip`` (R, N)) (+ ``bias`` (N)), y = (s - mean) * inv_std * ``gamma`` (+ ``beta``),
    mean 0 when ``simplified`` (RMS). Returns (y, s or None, mean (R, 1), inv_std (R, 1)) in x2's
    dtype, or None where it does not apply (no perf extra, float64 without numba loaded, other dtypes
    or shapes): the caller's numpy path then runs, and reports bad shapes.

    float32 runs the compiled rows from their cached machine code (no numba in the process: see
    onyx.ops._native); float64 only once numba is loaded (3-10x the numpy passes, but a few percent of
    a model's run, not worth numba's memory on its own)."""
    from onyx.ops import _native, _perf

    if x2.ndim != 2 or x2.dtype not in _JIT_DTYPES:
        return None
    if x2.dtype == np.float32:
        if not _native.available():
            return None
        jit = None
    elif (jit := _perf.jit_module("onyx.ops.nn._jit", if_loaded=True)) is None:
        return None
    rows, n = x2.shape
    dt = x2.dtype
    empty1 = np.zeros(0, dtype=dt)
    vecs = []
    for v in (gamma, beta, bias):
        if v is None:
            vecs.append(empty1)
        elif v.size != n or v.dtype.kind != "f":
            return None
        else:
            vecs.append(np.ascontiguousarray(v.reshape(n), dtype=dt))
    if skip is not None and (skip.shape != x2.shape or skip.dtype != dt):
        return None
    empty2 = np.zeros((0, 0), dtype=dt)
    y = np.empty((rows, n), dtype=dt)
    s = np.empty((rows, n), dtype=dt) if keep_sum else empty2
    mean = np.empty(rows, dtype=dt)
    inv = np.empty(rows, dtype=dt)
    sk = empty2 if skip is None else np.ascontiguousarray(skip)
    g, b, bi = vecs
    xc = np.ascontiguousarray(x2)
    if jit is None:  # float32: the compiled rows from their cached machine code (onyx.ops._native)
        eps = np.array([epsilon], np.float64)
        addr = [a.ctypes.data if a.size else 0 for a in (sk, s)]
        params = np.array(
            [0, rows, n, xc.ctypes.data, addr[0], bi.ctypes.data, bi.size, g.ctypes.data, b.ctypes.data,
             b.size, eps.ctypes.data, simplified, y.ctypes.data, addr[1], mean.ctypes.data, inv.ctypes.data],
            np.int64,
        )  # fmt: skip
        team.run_rows(_native.task("onyx.ops.nn._jit", "_norm_rows_task"), params, rows, False)
    else:
        jit.norm_rows(xc, sk, bi, g, b, float(epsilon), simplified, y, s, mean, inv)
    return y, (s if keep_sum else None), mean.reshape(rows, 1), inv.reshape(rows, 1)
