"""MatMul, Gemm, Einsum, Det and MatMulInteger beyond the node suite."""

import ml_dtypes
import numpy as np
import pytest

from onyx.errors import InvalidArgument
from tests.ops.math._oracle import check, ort, run

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(2)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# --- MatMul ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sa, sb",
    [
        ((3,), (3,)),
        ((3,), (3, 4)),
        ((2, 3), (3,)),
        ((5, 2, 3), (3, 4)),
        ((1, 2, 3), (4, 3, 2)),
        ((2, 0), (0, 3)),
    ],
)
def test_matmul_shapes(sa, sb):
    a, b = rand(*sa), rand(*sb)
    check(run("MatMul", 13, a, b), np.asarray(np.matmul(a, b)), rtol=1e-5, atol=1e-6)


def test_matmul_types():
    a, b = rand(4, 5), rand(5, 3)
    for dt in (np.float16, BF16):
        got = run("MatMul", 13, a.astype(dt), b.astype(dt))
        assert got.dtype == dt
        np.testing.assert_allclose(
            got.astype(np.float32),
            a.astype(dt).astype(np.float32) @ b.astype(dt).astype(np.float32),
            rtol=2e-2,
            atol=5e-2,
        )
    ai = np.array([[2**31 - 1, 1]], np.int32)
    bi = np.array([[2], [0]], np.int32)
    check(run("MatMul", 13, ai, bi), np.array([[-2]], np.int32))  # wraps as in C
    check(run("MatMul", 1, a, b), a @ b, rtol=1e-5)


def test_matmul_errors():
    with pytest.raises(InvalidArgument, match="MatMul"):
        run("MatMul", 13, rand(2, 3), rand(4, 2))
    with pytest.raises(InvalidArgument, match="rank"):
        run("MatMul", 13, np.array(1.0, np.float32), rand(2))


# --- Gemm -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", [None, (), (1,), (4,), (3, 1), (3, 4)])
def test_gemm_against_ort(trans_a, trans_b, c_shape):
    a = rand(*((5, 3) if trans_a else (3, 5)))
    b = rand(*((4, 5) if trans_b else (5, 4)))
    c = None if c_shape is None else rand(*c_shape)
    attrs = dict(alpha=0.5, beta=2.0, transA=trans_a, transB=trans_b)
    check(run("Gemm", 13, a, b, c, **attrs), ort("Gemm", 13, a, b, c, **attrs)[0], rtol=1e-5, atol=1e-6)


def test_gemm_old_versions():
    a, b, c = rand(3, 5), rand(5, 4), rand(4)
    expected = a @ b + c
    check(run("Gemm", 6, a, b, c, broadcast=1), expected, rtol=1e-5)
    check(run("Gemm", 1, a, b, c, broadcast=1), expected, rtol=1e-5)
    check(run("Gemm", 9, a, b, c), expected, rtol=1e-5)
    check(run("Gemm", 11, a, b), a @ b, rtol=1e-5)


def test_gemm_other_types_and_errors():
    a, b = rand(3, 5), rand(5, 4)
    got = run("Gemm", 13, a.astype(np.float16), b.astype(np.float16), alpha=2.0)
    assert got.dtype == np.float16
    ai = np.array([[1, 2], [3, 4]], np.int64)
    check(run("Gemm", 13, ai, ai, np.array([1], np.int64), beta=3.0), ai @ ai + 3)
    check(run("Gemm", 13, ai, ai, None, alpha=2.0), 2 * (ai @ ai))
    with pytest.raises(InvalidArgument, match="2-D"):
        run("Gemm", 13, rand(2, 3, 4), b)
    with pytest.raises(InvalidArgument, match="transA"):
        run("Gemm", 13, a, b, transA=1)
    with pytest.raises(InvalidArgument, match="C"):
        run("Gemm", 13, a, b, rand(5))


# --- Einsum ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "eq, shapes",
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("ij,jk", [(3, 4), (4, 5)]),
        ("ba,ab", [(3, 4), (4, 3)]),
        ("Ba,aC", [(3, 4), (4, 2)]),  # implicit output sorts by ASCII: upper case first -> "BC"
        ("bA,Ac", [(3, 4), (4, 2)]),  # -> "bc"
        ("i i", [(3, 3)]),
        ("ii->i", [(3, 3)]),
        ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
        ("...ij,jk", [(2, 3, 4), (4, 5)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
        ("bhqd,bhkd->bhqk", [(2, 2, 70, 8), (2, 2, 70, 8)]),
        ("i,i", [(4,), (4,)]),
        ("ij->", [(3, 4)]),
    ],
)
def test_einsum(eq, shapes):
    xs = [rand(*s) for s in shapes]
    got = run("Einsum", 12, *xs, equation=eq)
    if eq == "Ba,aC":  # onnxruntime rejects upper case labels in the implicit form
        expected = np.einsum("Ba,aC->BC", *xs)
    else:
        expected = ort("Einsum", 12, *xs, equation=eq)[0]
    check(got, expected, rtol=1e-5, atol=1e-5)


def test_einsum_types_and_errors():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    check(run("Einsum", 12, a, a, equation="ij,ij->i"), np.array([5, 50], np.int32))
    h = rand(2, 3).astype(np.float16)
    got = run("Einsum", 12, h, h, equation="ij,kj->ik")
    assert got.dtype == np.float16
    with pytest.raises(InvalidArgument, match="Einsum"):
        run("Einsum", 12, a, equation="ij,jk->ik")
    with pytest.raises(InvalidArgument, match="Einsum"):
        run("Einsum", 12, a, a, equation="ij,jk->ik")


# --- Det ------------------------------------------------------------------------------------------


def test_det():
    x = rand(2, 3, 3, 3)
    check(run("Det", 11, x), np.linalg.det(x), rtol=1e-4, atol=1e-5)
    got = run("Det", 22, np.array([[2.0, 0.0], [0.0, 3.0]]))
    assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.float64 and got == 6.0
    got = run("Det", 22, np.eye(3, dtype=np.float16) * 2)
    assert got.dtype == np.float16 and got == 8
    with pytest.raises(InvalidArgument, match="Det"):
        run("Det", 22, rand(2, 3))


# --- MatMulInteger --------------------------------------------------------------------------------


@pytest.mark.parametrize("ta, tb", [(np.uint8, np.uint8), (np.int8, np.int8), (np.uint8, np.int8)])
@pytest.mark.parametrize("k", [7, 300])
def test_matmul_integer_against_ort(ta, tb, k):
    info_a, info_b = np.iinfo(ta), np.iinfo(tb)
    a = RNG.integers(info_a.min, info_a.max + 1, (4, k)).astype(ta)
    b = RNG.integers(info_b.min, info_b.max + 1, (k, 3)).astype(tb)
    za = np.array(info_a.max, ta)
    zb = np.array(3, tb)
    check(run("MatMulInteger", 10, a, b, za, zb), ort("MatMulInteger", 10, a, b, za, zb)[0])
    check(run("MatMulInteger", 10, a, b), ort("MatMulInteger", 10, a, b)[0])


def test_matmul_integer_per_row_and_column_zero_points():
    a = RNG.integers(0, 256, (2, 3, 5)).astype(np.uint8)
    b = RNG.integers(-128, 128, (5, 4)).astype(np.int8)
    za = np.array([1, 2, 3], np.uint8)
    zb = np.array([0, -1, 5, 7], np.int8)
    expected = (a.astype(np.int32) - za[:, None].astype(np.int32)) @ (
        b.astype(np.int32) - zb.astype(np.int32)
    )
    check(run("MatMulInteger", 10, a, b, za, zb), expected)
    with pytest.raises(InvalidArgument, match="a_zero_point"):
        run("MatMulInteger", 10, a, b, np.array([1, 2], np.uint8))
