"""onyx.kernels.blas: GEMM with an accumulating beta on strided windows, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.kernels import blas, mkl

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


# --- matmul_stack: a stack of products as one strided batch GEMM


def _heads_of_projection(rng, dtype, batch=2, heads=4, seq=128, size=64):
    """Q, K, V as (B, N, S, H) views of one transposed projection (N*H*3, B*S), as Attention makes them."""
    proj = rng.normal(size=(3 * heads * size, batch * seq)).astype(dtype)
    return [
        proj[i * heads * size : (i + 1) * heads * size].reshape(heads, size, batch, seq).transpose(2, 0, 3, 1)
        for i in range(3)
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_stack_reads_every_layout_in_place(dtype):
    rng = np.random.default_rng(5)
    q, k, v = _heads_of_projection(rng, dtype)
    c_order = rng.normal(size=(2, 4, 128, 64)).astype(dtype)
    pairs = [
        (q, np.swapaxes(k, -1, -2)),  # column-major heads on both sides (scores)
        (rng.normal(size=(2, 4, 128, 128)).astype(dtype), v),  # row-major scores, column-major V
        (c_order, np.swapaxes(c_order, -1, -2)),  # row-major and its transpose
        (c_order[:1], rng.normal(size=(3, 4, 64, 130)).astype(dtype)[:, :, :, :128]),  # broadcast, wider rows
        (rng.normal(size=(5, 128, 96)).astype(dtype), rng.normal(size=(96, 120)).astype(dtype)),  # 2-D b
        # batch axes that do not flatten to one stride: a call per leading index
        (rng.normal(size=(3, 6, 128, 64)).astype(dtype)[:, :4], np.swapaxes(c_order[:1], -1, -2)),
        (rng.normal(size=(3, 1, 128, 64)).astype(dtype), rng.normal(size=(4, 64, 128)).astype(dtype)),
    ]
    tol = 1e-4 if dtype == np.float32 else 1e-12
    for a, b in pairs:
        got = blas.matmul_stack(a, b)
        assert got is not None, (a.shape, a.strides, b.shape, b.strides)
        want = np.matmul(a.astype(np.float64), b.astype(np.float64))
        assert got.shape == want.shape and got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_matmul_stack_declines_what_it_should_not_run():
    f32 = np.float32
    big = np.ones((4, 128, 64), f32), np.ones((4, 64, 128), f32)
    assert blas.matmul_stack(*big) is not None
    mid = np.ones((4, 100, 100), f32)
    huge = np.ones((2, 512, 512), f32)
    if mkl.active():
        # MKL: any product above 2^12 multiply-adds (smaller: numpy's loop costs less than ctypes)
        np.testing.assert_array_equal(blas.matmul_stack(mid, mid), mid @ mid)
        np.testing.assert_array_equal(blas.matmul_stack(huge, huge), huge @ huge)
    else:
        # at most 100^3 multiply-adds per product: OpenBLAS's small-matrix batch path segfaults (#5980)
        assert blas.matmul_stack(mid, mid) is None
        # products too big to run one per thread
        assert blas.matmul_stack(huge, huge) is None
    assert blas.matmul_stack(np.ones((4, 8, 8), f32), np.ones((4, 8, 8), f32)) is None
    # one product
    assert blas.matmul_stack(np.ones((1, 128, 64), f32), np.ones((1, 64, 128), f32)) is None
    # types: mixed, integer, or both 2-D
    assert blas.matmul_stack(big[0], big[1].astype(np.float64)) is None
    assert blas.matmul_stack(big[0].astype(np.int32), big[1].astype(np.int32)) is None
    assert blas.matmul_stack(big[0][0], big[1][0]) is None
    # layouts BLAS cannot read in place: strided columns, a batch walked backwards
    assert blas.matmul_stack(np.ones((4, 128, 128), f32)[:, :, ::2], big[1]) is None
    assert blas.matmul_stack(big[0][::-1], big[1]) is None
    # shapes that do not multiply
    assert blas.matmul_stack(big[0], big[0]) is None


def test_matmul_op_and_attention_take_the_batch_gemm(monkeypatch):
    from onyx.ops.contrib._common import attend
    from onyx.ops.linalg.mat_mul import matmul

    calls = []
    real = blas.matmul_stack

    def spy(a, b):
        y = real(a, b)
        calls.append(y is not None)
        return y

    monkeypatch.setattr(blas, "matmul_stack", spy)
    rng = np.random.default_rng(9)
    q, k, v = _heads_of_projection(rng, np.float32)
    np.testing.assert_allclose(
        matmul(q, np.swapaxes(k, -1, -2)), np.matmul(q, np.swapaxes(k, -1, -2)), rtol=1e-5
    )
    assert calls == [True]
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * np.float32(0.125)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    scores /= scores.sum(-1, keepdims=True)
    want = np.matmul(scores, v).transpose(0, 2, 1, 3).reshape(2, 128, 256)
    got, _ = attend(q, k, v, 0.125, None, "t")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert calls == [True, True, True]


# --- gemm_taps: one GEMM per kernel offset over windows of phase planes, accumulated


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_taps_sums_the_windows(dtype):
    rng = np.random.default_rng(4)
    planes = [rng.normal(size=(6, 40)).astype(dtype) for _ in range(2)]
    a = rng.normal(size=(5, 7, 6)).astype(dtype)
    bases = [planes[0], planes[1], planes[0], planes[1], planes[0]]
    starts = [0, 3, 9, 17, 20]
    c = np.full((7, 20), np.nan, dtype)  # overwritten by the first term
    before = [p.copy() for p in planes]
    blas.gemm_taps(a, bases, starts, c)
    want = sum(a[t].astype(np.float64) @ bases[t][:, s : s + 20] for t, s in enumerate(starts))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(c, want, rtol=tol, atol=tol)
    for p, b in zip(planes, before):
        np.testing.assert_array_equal(p, b)


def test_gemm_taps_checks_once_before_any_call():
    f32 = np.float32
    a, plane, c = np.ones((2, 3, 4), f32), np.ones((4, 10), f32), np.zeros((3, 6), f32)
    with pytest.raises(ValueError, match="does not fit"):
        blas.gemm_taps(a, [plane, plane], [0, 5], c)  # 5 + 6 > 10
    with pytest.raises(ValueError, match="does not fit"):
        blas.gemm_taps(a, [plane, plane.astype(np.float64)], [0, 1], c)
    with pytest.raises(ValueError, match="does not fit"):
        blas.gemm_taps(a, [plane, np.ones((10, 4), f32).T], [0, 1], c)  # a column-major base
    with pytest.raises(ValueError, match="do not agree"):
        blas.gemm_taps(a, [plane], [0], c)  # one window for two offsets
    with pytest.raises(ValueError, match="do not agree"):
        blas.gemm_taps(np.ones((2, 4, 3), f32).transpose(0, 2, 1), [plane, plane], [0, 1], c)
    ro = np.zeros((3, 6), f32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="do not agree"):
        blas.gemm_taps(a, [plane, plane], [0, 1], ro)
    assert not c.any()  # nothing ran
    empty = np.full((3, 6), np.nan, f32)
    blas.gemm_taps(np.ones((2, 3, 0), f32), [np.ones((0, 10), f32)] * 2, [0, 1], empty)
    np.testing.assert_array_equal(empty, np.zeros((3, 6), f32))
