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
    X,
    roots,
    feature,
    threshold,
    mode,
    single_mode,
    true_next,
    false_next,
    missing_true,
    any_missing,
    is_leaf,
    leaf_id,
    W,
    H,
    scores,
    has,
    limit,
):  # pragma: no cover - compiled
    """Walk every (row, tree) pair to its leaf and add the leaf's weights in tree order.

    Modes: 0 LEQ, 1 LT, 2 GTE, 3 GT, 4 EQ, 5 NEQ (BRANCH_MEMBER is left to numpy). Returns 0, or -1
    when a walk takes more than ``limit`` steps (a cycle).
    """
    N = X.shape[0]
    T = roots.shape[0]
    K = W.shape[1]
    for n in range(N):
        for t in range(T):
            node = roots[t]
            steps = 0
            while not is_leaf[node]:
                steps += 1
                if steps > limit:
                    return -1
                v = X[n, feature[node]]
                m = single_mode if single_mode >= 0 else mode[node]
                thr = threshold[node]
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
                node = true_next[node] if c else false_next[node]
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
