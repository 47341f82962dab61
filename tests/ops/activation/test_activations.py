"""Activation kernels beyond the node suite: old opsets, other float types, extremes, errors."""

import math
import warnings

import ml_dtypes
import numpy as np
import pytest

from onyx.errors import InvalidArgument
from tests.ops.math._oracle import check, ort, run

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(1)
X = (RNG.standard_normal((3, 4, 5)) * 3).astype(np.float32)

# op, opset for the onnxruntime comparison, attributes
ORT_CASES = [
    ("Celu", 12, {"alpha": 0.7}),
    ("Elu", 22, {"alpha": 0.5}),
    ("HardSigmoid", 22, {"alpha": 0.3, "beta": 0.4}),
    ("HardSwish", 14, {}),
    ("LeakyRelu", 16, {"alpha": 0.1}),
    ("LeakyRelu", 16, {"alpha": 1.5}),
    ("Mish", 22, {}),
    ("Relu", 14, {}),
    ("Selu", 22, {}),
    ("Selu", 22, {"alpha": 2.0, "gamma": 3.0}),
    ("Shrink", 9, {"lambd": 1.5, "bias": 0.5}),
    ("Sigmoid", 13, {}),
    ("Softplus", 22, {}),
    ("Softsign", 22, {}),
    ("ThresholdedRelu", 22, {"alpha": 0.5}),
    ("Tanh", 13, {}),
    ("Gelu", 20, {}),
    ("Gelu", 20, {"approximate": "tanh"}),
    ("Softmax", 13, {"axis": 1}),
    ("Softmax", 11, {"axis": 1}),
    ("LogSoftmax", 13, {}),
    ("LogSoftmax", 11, {"axis": -1}),
    ("Hardmax", 13, {"axis": 0}),
    ("Hardmax", 11, {"axis": 2}),
]


@pytest.mark.parametrize("op_type, opset, attrs", ORT_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_against_onnxruntime(op_type, opset, attrs, dtype):
    # onnxruntime runs float32 for all of them; the float64 kernels are held to the same numbers
    expected = ort(op_type, opset, X, **attrs)[0].astype(dtype)
    check(run(op_type, opset, X.astype(dtype), **attrs), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op_type, opset, attrs", ORT_CASES)
@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_low_precision_types_follow_float32(op_type, opset, attrs, dtype):
    x = X.astype(dtype)
    got = run(
        op_type, max(opset, 22) if op_type not in ("Softmax", "LogSoftmax", "Hardmax") else opset, x, **attrs
    )
    assert got.dtype == dtype and got.shape == x.shape
    ref = run(op_type, opset, x.astype(np.float32), **attrs).astype(dtype)
    np.testing.assert_allclose(got.astype(np.float32), ref.astype(np.float32), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize(
    "op_type, attrs",
    [
        ("Elu", {"alpha": 0.5}),
        ("HardSigmoid", {}),
        ("LeakyRelu", {}),
        ("Relu", {}),
        ("Selu", {}),
        ("Sigmoid", {}),
        ("Tanh", {}),
    ],
)
def test_opset1_consumed_inputs(op_type, attrs):
    check(run(op_type, 1, X, consumed_inputs=[0], **attrs), run(op_type, 6, X, **attrs))


def test_sigmoid_extremes_without_warnings():
    x = np.array([-1000, -100, -20, 0, 20, 100, 1000, np.nan], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = run("Sigmoid", 13, x)
        s = run("Swish", 24, x)
    np.testing.assert_array_equal(y[[0, 3, 6]], [0, 0.5, 1])
    np.testing.assert_allclose(y[2], 1 / (1 + math.exp(20)), rtol=1e-6)  # relative accuracy in the tail
    assert np.isnan(y[7]) and np.isnan(s[7])
    np.testing.assert_array_equal(s[[0, 3, 6]], [0, 0, 1000])


def test_softplus_mish_no_overflow():
    x = np.array([-1000, 0, 1000], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(run("Softplus", 22, x), np.array([0, math.log(2), 1000], np.float32))
        check(run("Mish", 22, x), np.array([0, 0, 1000], np.float32))


def test_relu_integers_and_nan():
    check(run("Relu", 14, np.array([-128, 0, 5], np.int8)), np.array([0, 0, 5], np.int8))
    assert np.isnan(run("Relu", 14, np.array([np.nan], np.float32))[0])


def test_shrink_integers():
    x = np.array([-5, -1, 0, 1, 5], np.int32)
    check(run("Shrink", 9, x, lambd=1.0, bias=2.0), np.array([-3, 0, 0, 0, 3], np.int32))
    x = np.arange(-3, 4).astype(np.int8)
    check(run("Shrink", 9, x, lambd=1.5, bias=1.5), ort("Shrink", 9, x, lambd=1.5, bias=1.5)[0])


def test_gelu_formulas():
    x = np.linspace(-6, 6, 1201)  # more than erf.SMALL: the blocked path
    erf_ref = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x])
    check(run("Gelu", 20, x), erf_ref, rtol=1e-13, atol=1e-14)
    check(run("Gelu", 20, x.astype(np.float32)), erf_ref.astype(np.float32), rtol=3e-7, atol=1e-7)
    tanh_ref = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    check(run("Gelu", 20, x, approximate="tanh"), tanh_ref, rtol=1e-13, atol=1e-15)
    with pytest.raises(InvalidArgument, match="approximate"):
        run("Gelu", 20, x, approximate="fast")


def test_swish_swiglu():
    a = RNG.standard_normal((2, 6)).astype(np.float32)
    b = RNG.standard_normal((2, 6)).astype(np.float32)
    sw = a / (1 + np.exp(-0.5 * a)).astype(np.float32)
    check(run("Swish", 24, a, alpha=0.5), sw, rtol=1e-6)
    check(run("SwiGLU", 28, a, b, alpha=0.5), sw * b, rtol=1e-6)
    with pytest.raises(InvalidArgument, match="same shape"):
        run("SwiGLU", 28, a, b[:, :3])


def test_celu_alpha_zero_rejected():
    with pytest.raises(InvalidArgument, match="alpha"):
        run("Celu", 12, X, alpha=0.0)


# --- PRelu ----------------------------------------------------------------------------------------


def test_prelu_broadcast_and_errors():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    slope = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    check(run("PRelu", 16, x, slope), ort("PRelu", 16, x, slope)[0])
    with pytest.raises(InvalidArgument, match="slope"):
        run("PRelu", 16, x, np.ones((2, 2, 3, 4), np.float32))
    with pytest.raises(InvalidArgument, match="slope"):
        run("PRelu", 16, x, np.ones((5,), np.float32))
    xi = np.array([-4, 3], np.int32)
    check(run("PRelu", 16, xi, np.array([2], np.int32)), np.array([-8, 3], np.int32))


def test_prelu_legacy_per_channel_slope():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    expected = np.where(x < 0, x * slope[:, None], x)
    check(run("PRelu", 6, x, slope), expected)
    check(run("PRelu", 1, x, slope, consumed_inputs=[0]), expected)
    check(run("PRelu", 6, x, np.array([0.5], np.float32)), np.where(x < 0, x * 0.5, x))


# --- softmax family -------------------------------------------------------------------------------


def test_softmax_coerced_2d_versus_per_axis():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    flat = x.reshape(2, 12)
    e = np.exp(flat - flat.max(1, keepdims=True))
    v11 = (e / e.sum(1, keepdims=True)).reshape(2, 3, 4)
    check(run("Softmax", 11, x, axis=1), v11, rtol=1e-5)
    check(run("Softmax", 1, x), v11, rtol=1e-5)  # default axis=1 in opsets 1-12
    e = np.exp(x - x.max(1, keepdims=True))
    check(run("Softmax", 13, x, axis=1), e / e.sum(1, keepdims=True), rtol=1e-5)
    check(run("LogSoftmax", 11, x, axis=-2), np.log(v11), rtol=1e-5, atol=1e-6)  # axis -2 is axis 1


def test_hardmax_first_maximum_and_coercion():
    x = np.array([[3, 1, 3], [2, 2, 2]], np.float32)
    check(run("Hardmax", 13, x), np.array([[1, 0, 0], [1, 0, 0]], np.float32))
    x3 = np.array([[[1, 5], [5, 2]]], np.float32)  # (1, 2, 2)
    check(run("Hardmax", 11, x3, axis=1), np.array([[[0, 1], [0, 0]]], np.float32))
    check(run("Hardmax", 13, x3, axis=1), np.array([[[0, 1], [1, 0]]], np.float32))
    check(run("Hardmax", 13, x3.astype(np.float16), axis=-1), np.array([[[0, 1], [1, 0]]], np.float16))


def test_softmax_edges():
    assert run("Softmax", 13, np.zeros((0, 3), np.float32)).shape == (0, 3)
    x = np.array([[1000.0, 1000.0], [-1000.0, 0.0]], np.float32)
    check(run("Softmax", 13, x), np.array([[0.5, 0.5], [0, 1]], np.float32))
    check(run("LogSoftmax", 13, x), np.array([[-math.log(2), -math.log(2)], [-1000, 0]], np.float32))
    with pytest.raises(InvalidArgument, match="axis"):
        run("Softmax", 13, x, axis=2)
    with pytest.raises(InvalidArgument, match="axis"):
        run("Hardmax", 11, x, axis=-3)


def test_bit_mask_selects_keep_specials():
    x = np.array([-np.inf, -1.0, 0.5, 2.0, np.inf, np.nan], np.float32)
    check(run("ThresholdedRelu", 22, x, alpha=1.0), np.array([0, 0, 0, 2.0, np.inf, 0], np.float32))
    got = run("ThresholdedRelu", 22, np.array(3.0, np.float64))
    assert isinstance(got, np.ndarray) and got.shape == () and got == 3.0
    xs = x[::2]  # strided input
    check(run("ThresholdedRelu", 22, xs, alpha=-2.0), np.array([0, 0.5, np.inf], np.float32))
    check(run("ThresholdedRelu", 22, x.astype(np.float16)), np.array([0, 0, 0, 2, np.inf, 0], np.float16))


@pytest.mark.parametrize("alpha", [-0.5, 0.0, 0.01, 1.0, 3.0])
def test_leaky_relu_any_alpha(alpha):
    x = np.array([-2.0, -0.0, 0.0, 1.5, -np.inf, np.inf], np.float32)
    if alpha == 0.0:
        x = x[x != -np.inf]  # C gives 0 * -inf = NaN there, onyx 0
    expected = np.array([v if v >= 0 else alpha * v for v in x.tolist()], np.float32)
    check(run("LeakyRelu", 16, x, alpha=alpha), expected)


@pytest.mark.parametrize("n", [5, 200, 70000])  # per-element path, one block, several blocks
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_gelu_paths_agree(n, dtype):
    x = np.random.default_rng(n).standard_normal(n).astype(dtype) * 3
    ref = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    got = run("Gelu", 20, x)
    assert got.dtype == dtype
    tol = {np.float32: 3e-7, np.float64: 1e-13, np.float16: 1e-3}[dtype]
    np.testing.assert_allclose(
        got.astype(np.float64), ref.astype(dtype).astype(np.float64), rtol=tol, atol=tol
    )
    strided = run("Gelu", 20, x[::2])  # may take the other path: equal within the tolerance
    np.testing.assert_allclose(strided.astype(np.float64), got[::2].astype(np.float64), rtol=tol, atol=tol)
