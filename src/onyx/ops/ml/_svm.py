"""Kernels and probability coupling shared by SVMClassifier and SVMRegressor."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument


def kernel_matrix(x: np.ndarray, sv: np.ndarray, kernel_type: str, params) -> np.ndarray:
    """K(x_i, sv_j) for all rows and support vectors: (N, S) float64."""
    params = list(params or [])
    gamma = params[0] if len(params) > 0 else 0.0
    coef0 = params[1] if len(params) > 1 else 0.0
    degree = params[2] if len(params) > 2 else 0.0
    if kernel_type == "LINEAR":
        return x @ sv.T
    if kernel_type == "POLY":
        return (gamma * (x @ sv.T) + coef0) ** degree
    if kernel_type == "SIGMOID":
        return np.tanh(gamma * (x @ sv.T) + coef0)
    if kernel_type == "RBF":
        d = (x * x).sum(axis=1)[:, None] + (sv * sv).sum(axis=1)[None, :] - 2.0 * (x @ sv.T)
        np.maximum(d, 0.0, out=d)
        return np.exp(-gamma * d)
    raise InvalidArgument(f"SVM: kernel_type must be LINEAR, POLY, RBF or SIGMOID, got {kernel_type!r}")


def sigmoid_predict(dec: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Platt scaling 1 / (1 + exp(dec * A + B)), computed without overflow."""
    f = dec * a + b
    out = np.empty_like(f)
    pos = f >= 0
    e = np.exp(-f[pos])
    out[pos] = e / (1.0 + e)
    out[~pos] = 1.0 / (1.0 + np.exp(f[~pos]))
    return out


def couple_probabilities(r: np.ndarray, k: int) -> np.ndarray:
    """Pairwise-coupled class probabilities (Wu, Lin and Weng's second method), rows at once.

    ``r`` is (N, k, k) with r[:, i, j] the probability of class i against class j.
    """
    n = r.shape[0]
    Q = np.empty((n, k, k))
    for t in range(k):
        col = r[:, :, t]
        Q[:, t, t] = (col**2).sum(axis=1) - col[:, t] ** 2
        for j in range(k):
            if j != t:
                Q[:, t, j] = -r[:, j, t] * r[:, t, j]
    p = np.full((n, k), 1.0 / k)
    eps = 0.005 / k
    live = np.arange(n)  # rows still iterating: each row stops at its own convergence
    for _ in range(max(100, k)):
        if live.size == 0:
            break
        Ql = Q[live]
        pl = p[live]
        Qp = np.einsum("ntj,nj->nt", Ql, pl)
        pQp = (pl * Qp).sum(axis=1)
        err = np.abs(Qp - pQp[:, None]).max(axis=1)
        go = err >= eps
        live, Ql, pl, Qp, pQp = live[go], Ql[go], pl[go], Qp[go], pQp[go]
        for t in range(k):
            qtt = Ql[:, t, t]
            diff = (-Qp[:, t] + pQp) / qtt
            pl[:, t] += diff
            pQp = (pQp + diff * (diff * qtt + 2 * Qp[:, t])) / (1 + diff) / (1 + diff)
            Qp = (Qp + diff[:, None] * Ql[:, t, :]) / (1 + diff)[:, None]
            pl /= (1 + diff)[:, None]
        p[live] = pl
    return p
