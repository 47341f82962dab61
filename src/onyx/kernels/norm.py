"""Layer normalisation of the rows of a 2-D array, with the optional residual (skip) and bias added
first and the affine stage (gamma, beta) folded in: LayerNormalization, SkipLayerNormalization,
their simplified (RMS) forms and EmbedLayerNormalization all come here.

The compiled path (``_norm.c``, float32 and float64) makes two passes over each row with float64
sums; the numpy path below is the reference it is tested against and runs for other builds (its
row sums go through BLAS: a matrix-vector product and batched dot products, several times faster
than numpy's reductions over the last axis, in the row's own precision).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from onyx.kernels import _loader, _threads

__all__ = ["Normalized", "layer_norm_rows", "layer_norm_rows_numpy", "standardize_rows"]

#: Elements from which the compiled loop splits its rows over threads.
PARALLEL_MIN = 1 << 15

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class Normalized(NamedTuple):
    """What :func:`layer_norm_rows` gives, all in the input's type."""

    y: np.ndarray  #: (R, N) the normalised rows, scaled and shifted
    s: np.ndarray | None  #: (R, N) x + skip + bias when asked for (``keep_sum``), else None
    mean: np.ndarray  #: (R, 1) the rows' means (zeros when ``simplified``)
    inv_std: np.ndarray  #: (R, 1) 1 / sqrt(variance + epsilon) (simplified: of the mean square)


def layer_norm_rows(
    x: np.ndarray,
    gamma: np.ndarray | None = None,
    beta: np.ndarray | None = None,
    *,
    skip: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    epsilon: float,
    simplified: bool = False,
    keep_sum: bool = False,
    threads: int = 0,
) -> Normalized:
    """Normalise the rows of the float32 or float64 (R, N) ``x``: s = x (+ ``skip`` (R, N))
    (+ ``bias`` (N,)); y = (s - mean) * inv_std (* ``gamma`` (N,)) (+ ``beta`` (N,), only with gamma),
    mean 0 when ``simplified`` (RMS normalisation). Vectors may have any shape of N elements (read
    in C order); every input is taken in x's type. Raises ValueError for shapes that do not fit."""
    rows, n = _check(x, gamma, beta, skip, bias)
    mod = _loader.compiled("_norm")
    if mod is None or not x.size:
        return layer_norm_rows_numpy(
            x, gamma, beta, skip=skip, bias=bias, epsilon=epsilon, simplified=simplified, keep_sum=keep_sum
        )
    dt = x.dtype

    def vec(v):
        return None if v is None else np.ascontiguousarray(v, dtype=dt).reshape(n)

    y = np.empty((rows, n), dt)
    s = np.empty((rows, n), dt) if keep_sum else None
    mean = np.empty(rows, dt)
    inv = np.empty(rows, dt)
    sk = None if skip is None else np.ascontiguousarray(skip, dtype=dt)
    nt = _threads.resolve(threads) if x.size >= PARALLEL_MIN else 1
    mod.norm_rows(
        np.ascontiguousarray(x), sk, vec(bias), vec(gamma), vec(beta), float(epsilon), bool(simplified),
        y, s, mean, inv, nt,
    )  # fmt: skip
    return Normalized(y, s, mean.reshape(rows, 1), inv.reshape(rows, 1))


def _check(x, gamma, beta, skip, bias) -> tuple[int, int]:
    if x.ndim != 2 or x.dtype not in _FLOATS:
        raise ValueError(
            f"layer_norm_rows: x must be a 2-D float32 or float64 array, got {x.dtype} {x.shape}"
        )
    rows, n = x.shape
    for name, v in (("gamma", gamma), ("beta", beta), ("bias", bias)):
        if v is not None and v.size != n:
            raise ValueError(f"layer_norm_rows: {name} {v.shape} must hold one value per column ({n})")
    if beta is not None and gamma is None:
        raise ValueError("layer_norm_rows: beta needs gamma")
    if skip is not None and skip.shape != x.shape:
        raise ValueError(f"layer_norm_rows: skip {skip.shape} must have x's shape {x.shape}")
    return rows, n


def layer_norm_rows_numpy(
    x: np.ndarray,
    gamma: np.ndarray | None = None,
    beta: np.ndarray | None = None,
    *,
    skip: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    epsilon: float,
    simplified: bool = False,
    keep_sum: bool = False,
) -> Normalized:
    """:func:`layer_norm_rows` by numpy (same contract): the reference of the compiled path."""
    rows, n = _check(x, gamma, beta, skip, bias)
    dt = x.dtype
    s = x
    if skip is not None:
        s = np.add(s, skip, dtype=dt)
    if bias is not None:
        s = np.add(s, np.asarray(bias, dtype=dt).reshape(n), dtype=dt)
    if not s.size:
        zeros = np.zeros((rows, 1), dt)
        return Normalized(s.copy(), s.copy() if keep_sum else None, zeros, zeros.copy())
    if simplified:
        y, mean, inv = _rms_rows(s, epsilon)
    else:
        y, mean, inv = standardize_rows(s, epsilon)
    if gamma is not None:
        y *= np.asarray(gamma, dtype=dt).reshape(n)
    if beta is not None:
        y += np.asarray(beta, dtype=dt).reshape(n)
    return Normalized(y, (s if s is not x else s.copy()) if keep_sum else None, mean, inv)


def _rms_rows(x2: np.ndarray, epsilon: float):
    """(x2 / sqrt(mean(x2^2) + epsilon), zeros, 1 / sqrt(...)) for the rows of the 2-D ``x2``."""
    r, n = x2.shape
    dt = x2.dtype
    if n > 8192:  # long rows: numpy's pairwise summation keeps float32 sums accurate
        ms = np.square(x2).mean(axis=1, keepdims=True)
    else:
        ms = np.matmul(x2[:, None, :], x2[:, :, None]).reshape(r, 1)
        ms *= dt.type(1.0 / n)
    ms += dt.type(epsilon)
    inv = np.sqrt(ms, out=ms)
    np.reciprocal(inv, out=inv)
    return x2 * inv, np.zeros((r, 1), dt), inv


def standardize_rows(x2: np.ndarray, epsilon: float, row_scale=None, row_bias=None):
    """Rows of the 2-D ``x2`` to zero mean and unit variance: returns (normalized, mean, inv_std),
    the statistics (R, 1). ``row_scale`` / ``row_bias`` (shape (R, 1)) are folded into the same passes
    when given (InstanceNormalization's per-channel affine stage)."""
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
