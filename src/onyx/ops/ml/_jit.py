"""numba-compiled loops of the ai.onnx.ml kernels: the optional ``perf`` extra.

Imported only by :func:`onyx.ops.ml._common.jit_module` when numba is installed and ONYX_NO_PERF is not
set, and only when a model has a kernel that uses it, so that numba's import time is paid by the
sessions that benefit. Each function here has a numpy twin in the kernel that calls it; the two give
the same results (tests/perf compares them).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def forest_sum(
    X, roots, packed, mode, single_mode, missing_true, any_missing, leaf_id, W, H, scores, has, limit
):  # pragma: no cover - compiled
    """Walk every (row, tree) pair to its leaf and add the leaf's weights, trees in order.

    ``packed`` holds one row per node: threshold, feature (-1 for a leaf), true and false successor,
    so that a step touches one cache line. Modes: 0 LEQ, 1 LT, 2 GTE, 3 GT, 4 EQ, 5 NEQ
    (BRANCH_MEMBER is left to numpy). Trees are the outer loop: a tree's nodes stay in cache for all
    the rows. Returns 0, or -1 when a walk takes more than ``limit`` steps (a cycle).
    """
    N = X.shape[0]
    T = roots.shape[0]
    K = W.shape[1]
    for t in range(T):
        root = roots[t]
        for n in range(N):
            node = root
            steps = 0
            while True:
                f = int(packed[node, 1])
                if f < 0:
                    break
                steps += 1
                if steps > limit:
                    return -1
                v = X[n, f]
                thr = packed[node, 0]
                m = single_mode if single_mode >= 0 else mode[node]
                if m == 0:
                    c = v <= thr
                elif m == 1:
                    c = v < thr
                elif m == 2:
                    c = v >= thr
                elif m == 3:
                    c = v > thr
                elif m == 4:
                    c = v == thr
                else:
                    c = v != thr
                if any_missing and missing_true[node] and np.isnan(v):
                    c = True
                node = int(packed[node, 2]) if c else int(packed[node, 3])
            lf = leaf_id[node]
            for k in range(K):
                if H[lf, k]:
                    scores[n, k] += W[lf, k]
                    has[n, k] = True
    return 0


@njit(cache=True, nogil=True)
def couple_probabilities(r, k):  # pragma: no cover - compiled
    """Pairwise coupling (Wu, Lin and Weng's second method) row by row; see _svm.couple_rows."""
    n = r.shape[0]
    out = np.empty((n, k))
    eps = 0.005 / k
    Q = np.empty((k, k))
    p = np.empty(k)
    Qp = np.empty(k)
    iters = max(100, k)
    for row in range(n):
        for t in range(k):
            s = 0.0
            for j in range(k):
                if j != t:
                    s += r[row, j, t] ** 2
                    Q[t, j] = -r[row, j, t] * r[row, t, j]
            Q[t, t] = s
        for t in range(k):
            p[t] = 1.0 / k
        for _ in range(iters):
            pQp = 0.0
            for t in range(k):
                acc = 0.0
                for j in range(k):
                    acc += Q[t, j] * p[j]
                Qp[t] = acc
                pQp += p[t] * acc
            err = 0.0
            for t in range(k):
                e = abs(Qp[t] - pQp)
                if e > err:
                    err = e
            if err < eps:
                break
            for t in range(k):
                qtt = Q[t, t]
                diff = (-Qp[t] + pQp) / qtt
                p[t] += diff
                inv = 1.0 / (1.0 + diff)
                pQp = (pQp + diff * (diff * qtt + 2 * Qp[t])) * inv * inv
                for j in range(k):
                    Qp[j] = (Qp[j] + diff * Q[t, j]) * inv
                    p[j] *= inv
        for t in range(k):
            out[row, t] = p[t]
    return out


@njit(cache=True, nogil=True)
def ovo_probabilities(dec, pi, pj, pa, pb, k):  # pragma: no cover - compiled
    """From one-vs-one decisions (N, pairs): the voted class index per row, and the Platt-scaled
    pairwise probabilities coupled into class probabilities (N, k); see svm_classifier."""
    n, npairs = dec.shape
    winner = np.zeros(n, dtype=np.int64)
    r = np.zeros((n, k, k))
    votes = np.zeros(k, dtype=np.int64)
    for row in range(n):
        votes[:] = 0
        for p in range(npairs):
            d = dec[row, p]
            if d > 0:
                votes[pi[p]] += 1
            else:
                votes[pj[p]] += 1
            f = d * pa[p] + pb[p]
            e = np.exp(-abs(f))
            q = (e if f >= 0 else 1.0) / (1.0 + e)
            if q < 1e-7:
                q = 1e-7
            elif q > 1 - 1e-7:
                q = 1 - 1e-7
            r[row, pi[p], pj[p]] = q
            r[row, pj[p], pi[p]] = 1 - q
        best = 0
        for c in range(1, k):
            if votes[c] > votes[best]:
                best = c
        winner[row] = best
    return winner, couple_probabilities(r, k)


#: kernel codes of :func:`svm_ovo` (SVMClassifier's kernel_type)
SVM_KERNELS = {"LINEAR": 0, "POLY": 1, "SIGMOID": 2, "RBF": 3}


@njit(cache=True, nogil=True)
def svm_ovo(x, sv, sv2, kernel, gamma, coef0, degree, pair_coef, rho, pi, pj, pa, pb, k):  # pragma: no cover
    """A few rows through a one-vs-one kernel SVM in one call: the kernel row against the support
    vectors ``sv`` (S, F) (code ``kernel`` of SVM_KERNELS; ``sv2`` their squared norms, for RBF as
    _svm.kernel_function computes it: |x|^2 + |sv|^2 - 2 x.sv, clipped at 0), the pair decisions
    ``kernel_row @ pair_coef + rho``, then :func:`ovo_probabilities` (with Platt ``pa``/``pb``) or,
    without them, the voted class and the decisions themselves."""
    n, f = x.shape
    s_count, npairs = pair_coef.shape
    dec = np.empty((n, npairs))
    for row in range(n):
        xr = x[row]
        x2 = 0.0
        for j in range(f):
            x2 += xr[j] * xr[j]
        for p in range(npairs):
            dec[row, p] = 0.0
        for s in range(s_count):
            svs = sv[s]
            dot = 0.0
            for j in range(f):
                dot += xr[j] * svs[j]
            if kernel == 0:
                kv = dot
            elif kernel == 1:
                kv = (gamma * dot + coef0) ** degree
            elif kernel == 2:
                kv = np.tanh(gamma * dot + coef0)
            else:
                d = -2.0 * dot + x2 + sv2[s]
                kv = np.exp(-gamma * (d if d > 0.0 else 0.0))
            pc = pair_coef[s]
            for p in range(npairs):
                dec[row, p] += kv * pc[p]
        for p in range(npairs):
            dec[row, p] += rho[p]
    if pa.shape[0] > 0:
        return ovo_probabilities(dec, pi, pj, pa, pb, k)
    winner = np.zeros(n, dtype=np.int64)
    votes = np.zeros(k, dtype=np.int64)
    for row in range(n):
        votes[:] = 0
        for p in range(npairs):
            if dec[row, p] > 0:
                votes[pi[p]] += 1
            else:
                votes[pj[p]] += 1
        best = 0
        for c in range(1, k):
            if votes[c] > votes[best]:
                best = c
        winner[row] = best
    return winner, dec
