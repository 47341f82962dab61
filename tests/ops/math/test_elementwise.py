"""Math kernels beyond the node suite: other dtypes, old opsets, C integer semantics, errors."""

import math
import warnings

import ml_dtypes
import numpy as np
import pytest

from onyx.errors import InvalidArgument
from tests.ops.math._oracle import check, ort, run

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(0)

UNARY = {
    "Abs": np.abs,
    "Acos": np.arccos,
    "Acosh": np.arccosh,
    "Asin": np.arcsin,
    "Asinh": np.arcsinh,
    "Atan": np.arctan,
    "Atanh": np.arctanh,
    "Ceil": np.ceil,
    "Cos": np.cos,
    "Cosh": np.cosh,
    "Exp": np.exp,
    "Floor": np.floor,
    "Log": np.log,
    "Neg": np.negative,
    "Reciprocal": np.reciprocal,
    "Round": np.rint,
    "Sign": np.sign,
    "Sin": np.sin,
    "Sinh": np.sinh,
    "Sqrt": np.sqrt,
    "Tan": np.tan,
}
DOMAIN = {"Acos": (-0.9, 0.9), "Asin": (-0.9, 0.9), "Atanh": (-0.9, 0.9), "Acosh": (1.1, 4), "Log": (0.1, 4)}
DOMAIN["Sqrt"] = DOMAIN["Log"]


@pytest.mark.parametrize("op_type", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, BF16])
def test_unary_float_types(op_type, dtype):
    lo, hi = DOMAIN.get(op_type, (-3, 3))
    x64 = RNG.uniform(lo, hi, (3, 4))
    x = x64.astype(dtype)
    got = run(op_type, 22, x)
    expected = UNARY[op_type](x.astype(np.float64)).astype(dtype)
    tol = 1e-2 if dtype in (np.float16, BF16) else 1e-6
    check(got, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("op_type", ["Abs", "Neg", "Sign", "Sqrt", "Exp", "Floor"])
def test_unary_zero_d_and_empty(op_type):
    x = np.array(2.25, np.float32)
    got = run(op_type, 13, x)
    assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.float32
    e = np.zeros((0, 3), np.float32)
    assert run(op_type, 13, e).shape == (0, 3)


@pytest.mark.parametrize("op_type", ["Abs", "Ceil", "Exp", "Floor", "Log", "Neg", "Reciprocal", "Sqrt"])
def test_unary_opset1_consumed_inputs(op_type):
    x = np.array([1.5, 2.0], np.float32)
    check(run(op_type, 1, x, consumed_inputs=[0]), run(op_type, 13, x))


def test_abs_neg_wrap_like_c():
    x = np.array([-128, -1, 127], np.int8)
    check(run("Abs", 13, x), np.array([-128, 1, 127], np.int8))
    check(run("Neg", 13, x), np.array([-128, 1, -127], np.int8))


def test_round_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, 2.6], np.float32)
    check(run("Round", 11, x), np.array([0, 2, 2, -0.0, -2, 2, 3], np.float32))


# --- binary arithmetic ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_div_truncates_toward_zero_like_ort(dtype):
    a = np.array([7, -7, 7, -7, 0, 5, -5, 1], dtype)
    b = np.array([2, 2, -2, -2, 3, 5, 3, -3], dtype)
    got = run("Div", 14, a, b)
    check(got, np.array([3, -3, -3, 3, 0, 1, -1, 0], dtype))
    check(got, ort("Div", 14, a, b)[0])


def test_div_unsigned_and_by_zero():
    a = np.array([7, 200], np.uint8)
    check(run("Div", 14, a, np.array([2, 3], np.uint8)), np.array([3, 66], np.uint8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(run("Div", 14, np.array([5, -5], np.int32), np.array([0, 0], np.int32)), np.zeros(2, np.int32))


def test_div_int_min_by_minus_one_does_not_raise():
    got = run("Div", 14, np.array([-128], np.int8), np.array([-1], np.int8))
    assert got.dtype == np.int8


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul"])
def test_integer_overflow_wraps(op_type):
    a = np.array([127, -128, 100], np.int8)
    b = np.array([1, 1, 3], np.int8)
    f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}[op_type]
    check(run(op_type, 14, a, b), f(a, b))
    check(run(op_type, 14, a, b), ort(op_type, 14, a, b)[0])


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float64, np.uint16])
def test_binary_types(op_type, dtype):
    a = RNG.uniform(1, 5, (2, 3)).astype(dtype)
    b = RNG.uniform(1, 5, (3,)).astype(dtype)
    got = run(op_type, 14, a, b)
    f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op_type]
    if np.dtype(dtype).kind == "u":
        f = np.floor_divide if op_type == "Div" else f
        check(got, f(a, b))
    else:
        check(got, f(a.astype(np.float64), b.astype(np.float64)).astype(dtype), rtol=1e-2)


def test_binary_zero_d_returns_array():
    got = run("Add", 14, np.array(1.0, np.float32), np.array(2.0, np.float32))
    assert isinstance(got, np.ndarray) and got.shape == ()


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div", "Pow", "Equal", "And", "Where"])
def test_broadcast_mismatch_raises(op_type):
    a = np.ones((2, 3), np.bool_ if op_type == "And" else np.float32)
    b = np.ones((4,), a.dtype)
    with pytest.raises(InvalidArgument, match=op_type):
        if op_type == "Where":
            run(op_type, 16, np.ones((2, 3), np.bool_), a, b)
        else:
            run(op_type, 14, a, b)


# --- legacy broadcast (opsets 1-6) ----------------------------------------------------------------


@pytest.mark.parametrize("op_type, f", [("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply)])
def test_legacy_broadcast_axis(op_type, f):
    a = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = RNG.standard_normal((3, 4)).astype(np.float32)
    got = run(op_type, 6, a, b, broadcast=1, axis=1)
    check(got, f(a, b[None, :, :, None]))
    b1 = RNG.standard_normal((2,)).astype(np.float32)
    check(run(op_type, 1, a, b1, broadcast=1, axis=0, consumed_inputs=[0, 0]), f(a, b1[:, None, None, None]))


def test_legacy_broadcast_suffix_and_scalar():
    a = np.ones((2, 3, 4), np.float32)
    check(run("Add", 6, a, np.arange(4, dtype=np.float32), broadcast=1), a + np.arange(4, dtype=np.float32))
    check(run("Div", 6, a, np.array(2.0, np.float32), broadcast=1), a / 2)
    check(run("Pow", 1, a * 3, np.array([2.0], np.float32), broadcast=1), (a * 3) ** 2)


def test_legacy_broadcast_errors():
    a = np.ones((2, 3, 4), np.float32)
    with pytest.raises(InvalidArgument, match="broadcast"):
        run("Add", 6, a, np.ones((3,), np.float32))  # broadcast=0 and shapes differ
    with pytest.raises(InvalidArgument, match="axis"):
        run("Mul", 6, a, np.ones((4,), np.float32), broadcast=1, axis=1)
    check(run("Equal", 1, a, np.ones((3, 1), np.float32), broadcast=1, axis=1), np.ones((2, 3, 4), bool))
    b = np.array([True, False, True])
    check(run("And", 1, a > 0, b, broadcast=1, axis=1), np.broadcast_to(b[:, None], (2, 3, 4)))


# --- Pow ------------------------------------------------------------------------------------------


def test_pow_mixed_types():
    x = np.array([1.5, 2.0, -3.0], np.float32)
    check(run("Pow", 15, x, np.array([2, 3, 3], np.int64)), np.array([2.25, 8.0, -27.0], np.float32))
    xi = np.array([2, 3, -2], np.int32)
    check(run("Pow", 15, xi, np.array([2.0, 0.5, 3.0], np.float32)), np.array([4, 1, -8], np.int32))
    check(run("Pow", 15, xi, np.array([10, 3, 3], np.int64)), np.array([1024, 27, -8], np.int32))


def test_pow_integer_wraps_and_negative_exponents():
    x = np.array([3, 2, 1, -1, 2], np.int32)
    y = np.array([40, 31, -2, -3, -1], np.int32)
    got = run("Pow", 15, x, y)
    expected = np.array([pow(3, 40, 2**32), 2**31, 1, -1, 0], np.int64).astype(np.uint32).astype(np.int32)
    check(got, expected)
    # onnxruntime goes through double (3**40 saturates there); without overflow the two agree
    x2, y2 = np.array([3, -2, 1, -1, 7], np.int32), np.array([4, 5, -2, -3, 2], np.int32)
    check(run("Pow", 15, x2, y2), ort("Pow", 15, x2, y2)[0])


def test_pow_half_base_float_exponent():
    x = np.array([4.0, 10.0], np.float16)
    y = np.array([0.1, 0.5], np.float32)
    check(run("Pow", 15, x, y), (x.astype(np.float32) ** y).astype(np.float16))


def test_pow_uint64_base():
    x = np.array([2, 3], np.uint64)
    check(run("Pow", 15, x, np.array([63, 2], np.uint64)), np.array([2**63, 9], np.uint64))


# --- Mod ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_integer_signs(dtype, fmod):
    if np.dtype(dtype).kind == "u":
        a, b = np.array([7, 200, 5], dtype), np.array([3, 7, 5], dtype)
    else:
        a, b = np.array([7, -7, 7, -7, 5], dtype), np.array([3, 3, -3, -3, 5], dtype)
    got = run("Mod", 13, a, b, fmod=fmod)
    check(got, np.fmod(a, b) if fmod else np.mod(a, b))
    check(got, ort("Mod", 13, a, b, fmod=fmod)[0])


def test_mod_float_and_errors():
    a = np.array([5.5, -5.5, 5.5, -0.0], np.float32)
    b = np.array([2.0, 2.0, -2.0, 2.0], np.float32)
    check(run("Mod", 13, a, b, fmod=1), np.fmod(a, b))
    check(run("Mod", 28, a, b), np.array([1.5, 0.5, -0.5, 0.0], np.float32))
    check(run("Mod", 28, np.array([-5.0]), np.array([np.inf])), np.array([np.inf]))
    check(run("Mod", 13, np.array([3, 4], np.int32), np.array([0, 3], np.int32)), np.array([0, 1], np.int32))
    with pytest.raises(InvalidArgument, match="fmod"):
        run("Mod", 13, a, b, fmod=2)


# --- bitwise --------------------------------------------------------------------------------------


def test_bitshift_out_of_range_amounts():
    x = np.array([-8, 8, -8, 8, -8], np.int32)
    y = np.array([1, 1, 40, 40, -1], np.int32)
    check(run("BitShift", 28, x, y, direction="RIGHT"), np.array([-4, 4, -1, 0, -1], np.int32))
    check(run("BitShift", 28, x, y, direction="LEFT"), np.array([-16, 16, 0, 0, 0], np.int32))
    u = np.array([255, 1], np.uint8)
    check(run("BitShift", 11, u, np.array([1, 8], np.uint8), direction="LEFT"), np.array([254, 0], np.uint8))
    with pytest.raises(InvalidArgument, match="direction"):
        run("BitShift", 11, u, u, direction="left")


def test_bitwise_ops():
    a = np.array([0b1100, -1], np.int16)
    b = np.array([0b1010, 5], np.int16)
    check(run("BitwiseAnd", 18, a, b), a & b)
    check(run("BitwiseOr", 18, a, b), a | b)
    check(run("BitwiseXor", 18, a, b), a ^ b)
    check(run("BitwiseNot", 18, a), ~a)


@pytest.mark.parametrize(
    "src, dst",
    [
        (np.float32, np.int32),
        (np.int32, np.float32),
        (np.float16, BF16),
        (np.uint64, np.float64),
        (np.int8, np.uint8),
        (np.uint8, np.bool_),
    ],
)
def test_bitcast_matches_view(src, dst):
    from onyx.ir.dtypes import from_numpy

    x = np.array([[1, 2, 3], [0, 1, 0]]).astype(src)
    got = run("BitCast", 26, x, to=int(from_numpy(dst)))
    expected = x.view(dst) if dst != np.bool_ else x.view(np.uint8) != 0
    check(got, expected)


def test_bitcast_sub_byte_and_errors():
    from onyx.ir.dtypes import DataType

    x = np.array([-8, -1, 0, 7], ml_dtypes.int4)
    got = run("BitCast", 26, x, to=int(DataType.UINT4))
    check(got, np.array([8, 15, 0, 7], ml_dtypes.uint4))
    back = run("BitCast", 26, got, to=int(DataType.INT4))
    check(back, x)
    with pytest.raises(InvalidArgument, match="bits"):
        run("BitCast", 26, np.ones(2, np.float32), to=int(DataType.DOUBLE))


# --- comparison and logic -------------------------------------------------------------------------


def test_comparisons_bool_output_and_strings():
    a = np.array([1, 2, 3], np.int64)
    b = np.array([2, 2, 2], np.int64)
    for op_type, f in [
        ("Greater", np.greater),
        ("Less", np.less),
        ("GreaterOrEqual", np.greater_equal),
        ("LessOrEqual", np.less_equal),
        ("Equal", np.equal),
    ]:
        check(run(op_type, 16 if "Or" in op_type else 13, a, b), f(a, b))
    s1 = np.array(["a", "b", "c"], dtype=object)
    s2 = np.array(["a", "x", "c"], dtype=object)
    check(run("Equal", 19, s1, s2), np.array([True, False, True]))
    check(run("Where", 16, np.array([True, False, True]), s1, s2), np.array(["a", "x", "c"], dtype=object))


def test_logical_ops():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    check(run("And", 7, a, b), a & b)
    check(run("Or", 7, a, b), a | b)
    check(run("Xor", 7, a, b), a ^ b)
    check(run("Not", 1, a), ~a)


def test_isinf_isnan_flags_and_float8():
    x = np.array([np.inf, -np.inf, np.nan, 1.0], np.float32)
    check(run("IsInf", 20, x), np.array([1, 1, 0, 0], bool))
    check(run("IsInf", 20, x, detect_negative=0), np.array([1, 0, 0, 0], bool))
    check(run("IsInf", 20, x, detect_positive=0), np.array([0, 1, 0, 0], bool))
    check(run("IsInf", 20, x, detect_positive=0, detect_negative=0), np.zeros(4, bool))
    check(run("IsNaN", 20, x), np.array([0, 0, 1, 0], bool))
    f8 = x.astype(ml_dtypes.float8_e5m2)
    check(run("IsInf", 20, f8), np.array([1, 1, 0, 0], bool))
    check(run("IsNaN", 20, f8), np.array([0, 0, 1, 0], bool))


# --- Clip -----------------------------------------------------------------------------------------


def test_clip_versions():
    x = np.array([-3.0, -0.5, 0.5, 3.0], np.float32)
    check(run("Clip", 6, x), x)
    check(run("Clip", 6, x, min=-1.0, max=1.0), np.clip(x, -1, 1))
    check(run("Clip", 1, x, min=-1.0, consumed_inputs=[0]), np.maximum(x, -1))
    check(run("Clip", 11, x, np.array(-1.0, np.float32)), np.maximum(x, -1))
    check(run("Clip", 11, x, None, np.array(1.0, np.float32)), np.minimum(x, 1))
    check(run("Clip", 13, x), x)
    # min > max: everything becomes max
    check(run("Clip", 13, x, np.array(2.0, np.float32), np.array(1.0, np.float32)), np.ones(4, np.float32))
    xi = np.array([-300, 5, 300], np.int64)
    check(run("Clip", 12, xi, np.array(-10, np.int64), np.array(10, np.int64)), np.array([-10, 5, 10]))
    xh = x.astype(np.float16)
    check(run("Clip", 6, xh), xh)
    with pytest.raises(InvalidArgument, match="scalar"):
        run("Clip", 13, x, np.array([1.0, 2.0], np.float32))


# --- CumSum / CumProd -----------------------------------------------------------------------------


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_against_ort(exclusive, reverse, axis):
    x = RNG.integers(-5, 5, (3, 4)).astype(np.float32)
    ax = np.array(axis, np.int64)
    got = run("CumSum", 14, x, ax, exclusive=exclusive, reverse=reverse)
    check(got, ort("CumSum", 14, x, ax, exclusive=exclusive, reverse=reverse)[0])
    xi = x.astype(np.int32)
    got = run("CumSum", 14, xi, ax.astype(np.int32), exclusive=exclusive, reverse=reverse)
    check(got, ort("CumSum", 14, xi, ax.astype(np.int32), exclusive=exclusive, reverse=reverse)[0])


def test_cumprod_and_edges():
    x = np.array([1, 2, 3, 4], np.int64)
    ax = np.array([0], np.int64)
    check(run("CumProd", 26, x, ax), np.array([1, 2, 6, 24]))
    check(run("CumProd", 26, x, ax, exclusive=1), np.array([1, 1, 2, 6]))
    check(run("CumProd", 26, x, ax, exclusive=1, reverse=1), np.array([24, 12, 4, 1]))
    check(run("CumSum", 14, np.zeros((0, 2), np.float32), ax, exclusive=1), np.zeros((0, 2), np.float32))
    with pytest.raises(InvalidArgument, match="axis"):
        run("CumSum", 14, x, np.array(3, np.int64))
    with pytest.raises(InvalidArgument, match="axis"):
        run("CumSum", 14, x, np.array([0, 1], np.int64))


# --- variadic -------------------------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["Max", "Min", "Sum", "Mean"])
def test_variadic_broadcast(op_type):
    xs = [
        RNG.standard_normal((2, 1, 4)).astype(np.float32),
        RNG.standard_normal((3, 1)).astype(np.float32),
        RNG.standard_normal((4,)).astype(np.float32),
    ]
    got = run(op_type, 13, *xs)
    check(got, ort(op_type, 13, *xs)[0], rtol=1e-5)
    one = run(op_type, 13, xs[0])
    check(one, xs[0])
    assert one is not xs[0]
    check(run(op_type, 1, xs[0], xs[0], consumed_inputs=[0, 0]), run(op_type, 6, xs[0], xs[0]))
    with pytest.raises(InvalidArgument, match=op_type):
        run(op_type, 13, xs[0], np.ones((5,), np.float32))


def test_variadic_other_types():
    a = np.array([1, 200], np.uint8)
    b = np.array([3, 100], np.uint8)
    check(run("Max", 13, a, b), np.array([3, 200], np.uint8))
    check(run("Min", 13, a, b), np.array([1, 100], np.uint8))
    h = np.array([1.0, 2.0], np.float16)
    check(run("Mean", 13, h, h, h), h)
    bf = np.array([1.0, 2.0], BF16)
    check(run("Sum", 13, bf, bf), np.array([2.0, 4.0], BF16))


# --- Erf ------------------------------------------------------------------------------------------


def test_erf_accuracy():
    x = np.concatenate([np.linspace(-7, 7, 40001), np.logspace(-30, 0.9, 500), -np.logspace(-30, 0.9, 500)])
    ref = np.array([math.erf(v) for v in x])
    for dtype, tol in [(np.float64, 2e-15), (np.float32, 2.5e-7)]:
        xd = x.astype(dtype)
        r = np.array([math.erf(v) for v in xd.astype(np.float64)]) if dtype != np.float64 else ref
        got = run("Erf", 13, xd)
        assert got.dtype == dtype
        nz = r != 0
        assert np.max(np.abs(got[nz] - r[nz]) / np.abs(r[nz])) < tol


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 100])  # the per-element path for tiny arrays, the vectorised one
def test_erf_specials_and_types(dtype, n):
    x = np.tile(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e-30], dtype), n)
    got = run("Erf", 13, x)[:7]
    np.testing.assert_array_equal(got[:4], [0, 0, 1, -1])
    assert np.signbit(got[1]) and np.isnan(got[4]) and got[5] == 1
    np.testing.assert_allclose(got[6], -1e-30 * 2 / math.sqrt(math.pi), rtol=1e-6)
    assert run("Erf", 13, np.array(0.5, np.float64)).shape == ()
    for dt in (np.float16, BF16):
        check(run("Erf", 13, np.array([0.5, -1.5], dt)), np.array([math.erf(0.5), math.erf(-1.5)]).astype(dt))


def test_kernels_hold_no_python_loop_per_element():
    # a cheap guard: a million-element Erf stays well under a second
    import time

    x = RNG.standard_normal(1_000_000).astype(np.float32)
    t = time.perf_counter()
    run("Erf", 13, x)
    assert time.perf_counter() - t < 1.0
