"""One-vs-one SVMs: the C decisions, votes and coupled probabilities against the numpy path, for every
kernel, with and without Platt scaling, from zero rows to many; a malformed model raises."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.kernels import _loader, svm

needs_c = pytest.mark.skipif(not _loader.built("_svm"), reason="onyx.kernels._svm was not built")


def _model(rng, k, kernel, platt, per_class=5, features=4):
    S = k * per_class
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    P = len(pairs)
    pa = -rng.uniform(0.5, 3.0, size=P) if platt else np.zeros(0)
    pb = rng.normal(scale=0.3, size=P) if platt else np.zeros(0)
    return svm.OvoModel(
        rng.normal(size=(S, features)), rng.normal(size=(S, P)), rng.normal(size=P),
        [i for i, _ in pairs], [j for _, j in pairs], pa, pb, k, kernel, 0.3, 0.1, 3.0,
    )  # fmt: skip


def _plain(monkeypatch, fn, *args):
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    try:
        return fn(*args)
    finally:
        monkeypatch.delenv("ONYX_NO_PERF")


@needs_c
@pytest.mark.parametrize("kernel", list(svm.KERNELS))
@pytest.mark.parametrize("platt", [True, False])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_svm_ovo_matches_numpy(kernel, platt, k, monkeypatch):
    rng = np.random.default_rng(k * 7 + platt)
    model = _model(rng, k, kernel, platt)
    for n in (0, 1, 3, 17, 100):  # 100 rows: more than one thread
        x = rng.normal(size=(n, 4))
        if n:
            x[0, 1] = 0.0
        w1, z1 = svm.svm_ovo(model, x, threads=2)
        w2, z2 = _plain(monkeypatch, svm.svm_ovo, model, x)
        assert w1.dtype == w2.dtype == np.int64 and z1.shape == z2.shape
        # decisions: sums of S products in another order (BLAS); probabilities: an iteration that
        # stops at 0.005 / k, the same steps from decisions a few ulps apart
        np.testing.assert_allclose(z1, z2, rtol=1e-9, atol=1e-11)
        np.testing.assert_array_equal(w1, w2)


@needs_c
@pytest.mark.parametrize("k", [2, 4])
def test_ovo_probabilities_matches_numpy(k, monkeypatch):
    rng = np.random.default_rng(k)
    model = _model(rng, k, "RBF", True)
    for n in (1, 12, 13, 200):  # 12 rows and fewer: numpy's Python-float coupling
        dec = rng.normal(size=(n, k * (k - 1) // 2)) * 2
        dec[0] = 0.0  # ties: the vote goes to the second class of each pair
        w1, p1 = svm.ovo_probabilities(model, dec, threads=2)
        w2, p2 = _plain(monkeypatch, svm.ovo_probabilities, model, dec)
        np.testing.assert_array_equal(w1, w2)
        np.testing.assert_allclose(p1, p2, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k", [2, 3, 4, 6])
def test_couplings_agree(k, monkeypatch):
    rng = np.random.default_rng(k)
    q = rng.uniform(0.01, 0.99, size=(30, k, k))
    r = np.triu(q, 1) + np.tril(1 - q.transpose(0, 2, 1), -1)
    vectorised = svm._couple_numpy(r, k)
    np.testing.assert_allclose(svm._couple_rows(r, k), vectorised, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(svm.couple_probabilities(r, threads=2), vectorised, rtol=1e-12, atol=1e-12)
    plain = _plain(monkeypatch, svm.couple_probabilities, r)
    np.testing.assert_allclose(plain, vectorised, rtol=1e-12, atol=1e-12)


@needs_c
def test_malformed_model_raises():
    native = _loader.compiled("_svm")
    sv, pc, rho = np.zeros((3, 2)), np.zeros((3, 1)), np.zeros(1)
    ok = (sv, pc, rho, np.array([0]), np.array([1]), np.zeros(0), np.zeros(0), 2, 3, 0.5, 0.0, 0.0)
    model = native.svm_model(*ok)
    for i, bad in [(3, np.array([2])), (4, np.array([-1])), (1, np.zeros((2, 1))), (2, np.zeros(2)),
                   (5, np.zeros(1)), (8, 7)]:  # fmt: skip
        args = list(ok)
        args[i] = bad
        with pytest.raises(ValueError):
            native.svm_model(*args)
    with pytest.raises(ValueError):  # X with the wrong number of features
        native.svm_ovo(model, np.zeros((1, 3)), np.zeros(1, np.int64), np.zeros((1, 1)), 1)
    with pytest.raises(ValueError):  # no Platt scaling to couple with
        native.ovo_probabilities(model, np.zeros((1, 1)), np.zeros(1, np.int64), np.zeros((1, 2)), 1)
