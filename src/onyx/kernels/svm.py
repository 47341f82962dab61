"""One-vs-one kernel SVM classifiers: decisions, votes and Platt probabilities coupled pairwise.

:class:`OvoModel` holds a classifier's support vectors and pair coefficients, built once. A few rows
run through :func:`svm_ovo` as one call (in C, ``_svm.c``, when built: numpy's per-call costs would
dominate); more rows take the kernel matrix on BLAS (:func:`kernel_function`) and
:func:`ovo_probabilities` from the decisions. The numpy path of each is complete and the reference.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from onyx.kernels import _loader, _threads

#: kernel codes of SVMClassifier's kernel_type, as _svm.c numbers them
KERNELS = {"LINEAR": 0, "POLY": 1, "SIGMOID": 2, "RBF": 3}
#: rows from which the C loops run on more than one thread
PARALLEL_ROWS = 64
#: up to this many rows the numpy coupling runs in Python floats (it usually stops after two or three
#: rounds, where numpy's per-call cost over k-sized arrays would dominate)
FEW_ROWS = 12


def kernel_function(
    sv: np.ndarray, kernel: str, gamma: float, coef0: float, degree: float, matmul: Callable = np.matmul
) -> Callable[[np.ndarray], np.ndarray]:
    """``x -> K(x_i, sv_j)`` (N, S) float64 for the kernel named ``kernel``, with what depends only
    on the support vectors (their transpose, their squared norms) computed once; products by
    ``matmul``. RBF's squared distance is |x|^2 + |sv|^2 - 2 x.sv, clipped at 0."""
    svt = np.ascontiguousarray(sv.T)
    if kernel == "LINEAR":
        return lambda x: matmul(x, svt)
    if kernel == "POLY":
        return lambda x: (gamma * matmul(x, svt) + coef0) ** degree
    if kernel == "SIGMOID":
        return lambda x: np.tanh(gamma * matmul(x, svt) + coef0)
    sv2 = (sv * sv).sum(axis=1)[None, :]
    neg_gamma = -gamma

    def rbf(x: np.ndarray) -> np.ndarray:
        d = matmul(x, svt)
        d *= -2.0
        d += (x * x).sum(axis=1)[:, None]
        d += sv2
        np.maximum(d, 0.0, out=d)
        d *= neg_gamma
        return np.exp(d, out=d)

    return rbf


class OvoModel:
    """A one-vs-one classifier: support vectors ``sv`` (S, F), ``pair_coef`` (S, P) and ``rho`` (P)
    giving the pair decisions ``K(x, sv) @ pair_coef + rho``, pair p between classes ``pi[p]`` (wins
    when the decision is positive) and ``pj[p]`` of ``k``; Platt's ``pa``, ``pb`` (P, or empty)."""

    def __init__(self, sv, pair_coef, rho, pi, pj, pa, pb, k: int, kernel: str, gamma, coef0, degree):
        self.sv = np.ascontiguousarray(sv, dtype=np.float64)
        self.pair_coef = np.ascontiguousarray(pair_coef, dtype=np.float64)
        self.rho = np.ascontiguousarray(rho, dtype=np.float64)
        self.pi = np.ascontiguousarray(pi, dtype=np.int64)
        self.pj = np.ascontiguousarray(pj, dtype=np.int64)
        self.pa = np.ascontiguousarray(pa, dtype=np.float64)
        self.pb = np.ascontiguousarray(pb, dtype=np.float64)
        self.k = int(k)
        self.kernel = kernel
        self.params = (float(gamma), float(coef0), float(degree))
        self.platt = self.pa.size > 0
        self.win_i = np.zeros((len(self.pi), self.k))  # class i gets the vote when dec > 0, j otherwise
        self.win_j = np.zeros((len(self.pi), self.k))
        self.win_i[np.arange(len(self.pi)), self.pi] = 1.0
        self.win_j[np.arange(len(self.pj)), self.pj] = 1.0
        self._kernel = kernel_function(self.sv, kernel, *self.params)
        self._compiled = None

    def compiled(self, native):
        """The model as the C module holds it (its own checked copy), built once."""
        if self._compiled is None:
            self._compiled = native.svm_model(
                self.sv, self.pair_coef, self.rho, self.pi, self.pj, self.pa, self.pb,
                self.k, KERNELS[self.kernel], *self.params,
            )  # fmt: skip
        return self._compiled


def svm_ovo(model: OvoModel, x: np.ndarray, *, threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(voted class index (N,) int64, scores): with Platt scaling the coupled class probabilities
    (N, k), else the pair decisions (N, P). ``x`` (N, F) float64."""
    native = _loader.compiled("_svm")
    if native is None:
        return _ovo_numpy(model, model._kernel(x) @ model.pair_coef + model.rho)
    n = x.shape[0]
    winner = np.empty(n, dtype=np.int64)
    out = np.empty((n, model.k if model.platt else len(model.rho)))
    native.svm_ovo(model.compiled(native), np.ascontiguousarray(x, dtype=np.float64), winner, out,
                   _row_threads(n, threads))  # fmt: skip
    return winner, out


def ovo_probabilities(model: OvoModel, dec: np.ndarray, *, threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(voted class index (N,) int64, coupled class probabilities (N, k)) from the pair decisions
    (N, P) of a model with Platt scaling."""
    native = _loader.compiled("_svm")
    if native is None:
        return _ovo_numpy(model, dec)
    n = dec.shape[0]
    winner = np.empty(n, dtype=np.int64)
    probs = np.empty((n, model.k))
    dec = np.ascontiguousarray(dec, dtype=np.float64)
    native.ovo_probabilities(model.compiled(native), dec, winner, probs, _row_threads(n, threads))
    return winner, probs


def votes(model: OvoModel, dec: np.ndarray) -> np.ndarray:
    """The voted class index (N,) from the pair decisions (N, P): the first class of most votes."""
    win = dec > 0
    return np.argmax(win @ model.win_i + ~win @ model.win_j, axis=1) if len(dec) else np.zeros(0, np.int64)


def _ovo_numpy(model: OvoModel, dec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """svm_ovo / ovo_probabilities from the decisions, by numpy."""
    winner = votes(model, dec)
    if not model.platt:
        return winner, dec
    n, k = dec.shape[0], model.k
    r = np.zeros((n, k, k))
    q = np.clip(sigmoid_predict(dec, model.pa, model.pb), 1e-7, 1 - 1e-7)
    r[:, model.pi, model.pj] = q
    r[:, model.pj, model.pi] = 1 - q
    return winner, (_couple_rows(r, k) if n <= FEW_ROWS else _couple_numpy(r, k))


def _row_threads(n: int, threads: int) -> int:
    return _threads.resolve(threads) if n >= PARALLEL_ROWS else 1


def sigmoid_predict(dec: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Platt scaling 1 / (1 + exp(dec * A + B)), computed without overflow."""
    f = dec * a + b
    e = np.exp(-np.abs(f))
    # f >= 0: exp(-f) / (1 + exp(-f)); f < 0: 1 / (1 + exp(f))
    return np.where(f >= 0, e, 1.0) / (1.0 + e)


def couple_probabilities(r: np.ndarray, *, threads: int = 0) -> np.ndarray:
    """Pairwise-coupled class probabilities (Wu, Lin and Weng's second method) of (N, k, k) pair
    probabilities, r[:, i, j] that of class i against class j: (N, k)."""
    native = _loader.compiled("_svm")
    n, k = r.shape[0], r.shape[1]
    if native is None:
        return _couple_rows(r, k) if n <= FEW_ROWS else _couple_numpy(r, k)
    out = np.empty((n, k))
    native.couple_probabilities(np.ascontiguousarray(r, dtype=np.float64), out, _row_threads(n, threads))
    return out


def _couple_rows(r: np.ndarray, k: int) -> np.ndarray:
    """_couple_numpy for a few rows, in Python floats (the same operations in the same order)."""
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


def _couple_numpy(r: np.ndarray, k: int) -> np.ndarray:
    """Pairwise coupling of many rows at once, each row iterating until its own convergence."""
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
    live = np.arange(n)  # rows still iterating
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
