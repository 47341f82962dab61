"""onyx.runtime.blas: GEMM with an accumulating beta on strided windows, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.runtime import blas

F32, F64 = np.float32, np.float64

pytestmark = pytest.mark.skipif(not blas.available(np.float32), reason="numpy has no OpenBLAS here")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("beta", [0.0, 1.0, 0.5])
def test_gemm_on_windows_accumulates(dtype, beta):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(7, 40)).astype(dtype)[:, 3:33]  # rows of a wider array
    big = rng.normal(size=(30, 90)).astype(dtype)
    b = big[:, 11:61]  # a window: row stride 90, 50 columns
    c = rng.normal(size=(7, 50)).astype(dtype)
    want = a @ b + beta * c
    before = big.copy()
    blas.gemm(a, b, c, beta)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(c, want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(big, before)  # the operand is only read


def test_gemm_beta_zero_ignores_garbage_in_c():
    a = np.ones((2, 3), np.float32)
    b = np.ones((3, 4), np.float32)
    c = np.full((2, 4), np.nan, np.float32)
    blas.gemm(a, b, c, 0.0)
    np.testing.assert_array_equal(c, np.full((2, 4), 3, np.float32))


def test_gemm_inner_dimension_zero():
    c = np.full((2, 3), np.nan, np.float32)
    blas.gemm(np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32), c, 0.0)
    np.testing.assert_array_equal(c, np.zeros((2, 3), np.float32))
    c = np.full((2, 3), 4, np.float32)
    blas.gemm(np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32), c, 0.5)
    np.testing.assert_array_equal(c, np.full((2, 3), 2, np.float32))


@pytest.mark.parametrize(
    "a, b, c, match",
    [
        (np.ones((2, 3), F32), np.ones((4, 5), F32), np.ones((2, 5), F32), "do not agree"),
        (np.ones((2, 3), F32), np.ones((3, 5), F32), np.ones((2, 4), F32), "do not agree"),
        (np.ones((2, 3), F64), np.ones((3, 5), F32), np.ones((2, 5), F32), "do not agree"),
        (np.ones((3, 2), F32).T, np.ones((3, 5), F32), np.ones((2, 5), F32), "row-major"),
        (np.ones((2, 3), F32), np.ones((3, 10), F32)[:, ::2], np.ones((2, 5), F32), "row-major"),
        (np.ones((2, 3), F32), np.ones((3, 5), F32), np.ones((2, 3, 5), F32), "do not agree"),
    ],
    ids=["inner", "output", "dtype", "a-transposed", "b-strided-columns", "c-rank"],
)
def test_gemm_rejects_what_blas_cannot_take(a, b, c, match):
    with pytest.raises(ValueError, match=match):
        blas.gemm(a, b, c)


def test_gemm_rejects_a_read_only_output():
    c = np.zeros((2, 5), np.float32)
    c.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        blas.gemm(np.ones((2, 3), np.float32), np.ones((3, 5), np.float32), c)


def test_no_gemm_for_other_types():
    assert not blas.available(np.int32)
    with pytest.raises(RuntimeError, match="no BLAS"):
        blas.gemm(np.ones((1, 1), np.int32), np.ones((1, 1), np.int32), np.ones((1, 1), np.int32))
