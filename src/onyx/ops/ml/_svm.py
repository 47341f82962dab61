"""Kernels and probability coupling shared by SVMClassifier and SVMRegressor."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import mm


def kernel_params_of(kernel_type: str, params) -> tuple[float, float, float]:
    """(gamma, coef0, degree) from kernel_params; checks the kernel type."""
    if kernel_type not in ("LINEAR", "POLY", "SIGMOID", "RBF"):
        raise InvalidArgument(f"SVM: kernel_type must be LINEAR, POLY, RBF or SIGMOID, got {kernel_type!r}")
    params = list(params or [])
    gamma = params[0] if len(params) > 0 else 0.0
    coef0 = params[1] if len(params) > 1 else 0.0
    degree = params[2] if len(params) > 2 else 0.0
    return gamma, coef0, degree


def kernel_function(sv: np.ndarray, kernel_type: str, params):
    """``x -> K(x_i, sv_j)`` for all rows and support vectors, (N, S) float64, with whatever depends
    only on the support vectors (their transpose, their squared norms) computed once."""
    gamma, coef0, degree = kernel_params_of(kernel_type, params)
    svt = np.ascontiguousarray(sv.T)
    if kernel_type == "LINEAR":
        return lambda x: mm(x, svt)
    if kernel_type == "POLY":
        return lambda x: (gamma * mm(x, svt) + coef0) ** degree
    if kernel_type == "SIGMOID":
        return lambda x: np.tanh(gamma * mm(x, svt) + coef0)
    sv2 = (sv * sv).sum(axis=1)[None, :]
    neg_gamma = -gamma

    def rbf(x: np.ndarray) -> np.ndarray:
        d = mm(x, svt)
        d *= -2.0
        d += (x * x).sum(axis=1)[:, None]
        d += sv2
        np.maximum(d, 0.0, out=d)
        d *= neg_gamma
        return np.exp(d, out=d)

    return rbf


def kernel_matrix(x: np.ndarray, sv: np.ndarray, kernel_type: str, params) -> np.ndarray:
    """K(x_i, sv_j) for all rows and support vectors: (N, S) float64."""
    return kernel_function(sv, kernel_type, params)(x)


def sigmoid_predict(dec: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Platt scaling 1 / (1 + exp(dec * A + B)), computed without overflow."""
    f = dec * a + b
    e = np.exp(-np.abs(f))
    # f >= 0: exp(-f) / (1 + exp(-f)); f < 0: 1 / (1 + exp(f))
    return np.where(f >= 0, e, 1.0) / (1.0 + e)


def couple_rows(r: np.ndarray, k: int) -> np.ndarray:
    """couple_probabilities for a few rows, in Python floats: the iteration usually stops after two or
    three rounds, where numpy's per-call cost over k-sized arrays would dominate."""
    out = np.empty((r.shape[0], k))
    eps = 0.005 / k
    rng = range(k)
    for n, rows in enumerate(r.tolist()):
        Q = [[0.0] * k for _ in rng]
        for t in rng:
            s = 0.0
            for j in rng:
                if j != t:
                    s += rows[j][t] ** 2
                    Q[t][j] = -rows[j][t] * rows[t][j]
            Q[t][t] = s
        p = [1.0 / k] * k
        for _ in range(max(100, k)):
            Qp = [sum(q * pj for q, pj in zip(Q[t], p)) for t in rng]
            pQp = sum(pt * qt for pt, qt in zip(p, Qp))
            if max(abs(qt - pQp) for qt in Qp) < eps:
                break
            for t in rng:
                Qt = Q[t]
                qtt = Qt[t]
                diff = (-Qp[t] + pQp) / qtt
                p[t] += diff
                inv = 1.0 / (1.0 + diff)
                pQp = (pQp + diff * (diff * qtt + 2 * Qp[t])) * inv * inv
                Qp = [(qj + diff * qtj) * inv for qj, qtj in zip(Qp, Qt)]
                p = [pj * inv for pj in p]
        out[n] = p
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
