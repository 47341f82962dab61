"""onyx.kernels.activation: the compiled erf / GELU (onyx.kernels._activation) against the numpy path
and against the definitions in double precision, on edge shapes, strided inputs, special values,
every float type, with and without a bias; then the ops that call them against onnxruntime.

Tolerances: both paths evaluate the same float32 polynomials, in another order of operations (the C
fuses multiply-adds; exp is onyx's own in C and numpy's in numpy), so they agree within a few float32
ulps. GELU = x * Phi(x) carries its rounding error in units of x (1 + erf(x) cancels for x << 0), so
its bounds are in ulps of x, not of the result.
"""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.kernels import activation as A
from onyx.kernels._loader import compiled

EPS32 = float(np.finfo(np.float32).eps)
SPECIAL = np.array(
    [0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 0.99999994, 1.0000001, 4.0, -4.0, 5.5, -5.5, 30.0,
     -60.0, 95.0, 1e-30, -1e-30, 1e-45, 3e38, -3e38],
    dtype=np.float32,
)  # fmt: skip
SHAPES = [(), (0,), (1,), (7,), (3, 1), (33, 1031), (5000, 7), (2, 3, 601), (0, 5), (40000,)]

_math_erf = np.frompyfunc(math.erf, 1, 1)


@pytest.fixture
def built():
    if compiled("_activation") is None:
        pytest.skip("onyx.kernels._activation was not built (or ONYX_NO_PERF is set): only numpy runs")


def _input(shape, dtype, seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    x = (rng.normal(size=shape) * 3).astype(dtype)
    flat = x.reshape(-1)
    k = min(flat.size, SPECIAL.size)
    flat[:k] = SPECIAL[:k].astype(dtype)
    return x


def _ulps_of(scale, dtype):
    """One ulp of ``scale`` (elementwise) in ``dtype``, as float64, at least the smallest normal's."""
    s = np.abs(np.asarray(scale, dtype=np.float64))
    tiny = float(np.finfo(dtype).tiny)
    return np.spacing(np.maximum(s, tiny).astype(dtype)).astype(np.float64)


def _gelu_exact(v):
    v = v.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.asarray(_math_erf(v / math.sqrt(2)), dtype=np.float64)
        return 0.5 * v * (1 + e)


def _gelu_tanh_exact(v):
    v = v.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))


def _close_in_ulps_of(got, want, scale, ulps):
    """got == want where either is not finite (NaN where NaN), else within ``ulps`` ulps of ``scale``."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(got) & np.isfinite(want)
    np.testing.assert_array_equal(got[~fin & ~np.isnan(got)], want[~fin & ~np.isnan(want)])
    err = np.abs(got[fin] - want[fin]) / _ulps_of(np.broadcast_to(scale, fin.shape)[fin], np.float32)
    assert err.size == 0 or err.max() <= ulps, f"max error {err.max():.2f} ulps"


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("name", ["gelu", "gelu_tanh"])
def test_gelu_compiled_matches_numpy_float32(shape, with_bias, name, built):
    x = _input(shape, np.float32)
    bias = None
    if with_bias and x.ndim:
        bias = np.random.default_rng(1).normal(size=shape[-1]).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        got = getattr(A, name)(x, bias)
        want = getattr(A, name + "_numpy")(x, bias)
        v = x if bias is None else x + bias
    assert got.dtype == np.float32 and got.shape == x.shape
    # both within ~1.6 ulps of x of the exact value (measured on a dense grid): 4 between them
    _close_in_ulps_of(got, want, v, 4)
    exact = (_gelu_exact if name == "gelu" else _gelu_tanh_exact)(v)
    _close_in_ulps_of(got, exact, v, 2.5)


@pytest.mark.parametrize("shape", [(), (1,), (7,), (33, 1031), (2, 3, 601)], ids=str)
def test_erf_compiled_matches_numpy_and_math_erf(shape, built):
    x = _input(shape, np.float32)
    got = A.erf(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    exact = np.asarray(_math_erf(x.astype(np.float64)), dtype=np.float64).reshape(x.shape)
    # within two ulps of the result (1.99 measured over a dense grid), so within four of numpy's
    _close_in_ulps_of(got, exact, exact, 2)
    _close_in_ulps_of(got, A.erf_numpy(x), exact, 4)


def test_erf_and_gelu_dense_grid(built):
    """Over [-6, 6] and magnitudes 1e-30 .. 10, both signs: erf within 2 ulps, GELU within 1.6 ulps of
    x (the C and numpy paths evaluate the same fits: the same bounds)."""
    x = np.linspace(-6, 6, 400_001, dtype=np.float32)
    x = np.concatenate([x, np.float32(10.0) ** np.linspace(-30, 1, 20_001).astype(np.float32)])
    x = np.concatenate([x, -x])
    erf_exact = np.asarray(_math_erf(x.astype(np.float64)), dtype=np.float64)
    for f in (A.erf, A.erf_numpy):
        _close_in_ulps_of(f(x), erf_exact, erf_exact, 2.0)
    g_exact = _gelu_exact(x)
    for f in (A.gelu, A.gelu_numpy):
        _close_in_ulps_of(f(x), g_exact, x, 1.6)
    _close_in_ulps_of(A.gelu_tanh(x), _gelu_tanh_exact(x), x, 1.6)


@pytest.mark.parametrize("name", ["erf", "gelu", "gelu_tanh"])
def test_float64_compiled_matches_numpy(name, built):
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.normal(size=5000) * 3, SPECIAL.astype(np.float64), [1e-300, -7.5, 40.0]])
    with np.errstate(invalid="ignore", over="ignore"):
        got = getattr(A, name)(x)
        want = getattr(A, name + "_numpy")(x)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = np.isfinite(want)
    np.testing.assert_array_equal(got[~ok & ~np.isnan(want)], want[~ok & ~np.isnan(want)])
    # the fits are good to ~5e-16 relative (erf); tanh form: numpy's tanh against exp, a few eps of x
    scale = np.abs(want[ok]) if name == "erf" else np.abs(x[ok])
    assert np.all(np.abs(got[ok] - want[ok]) <= 8 * np.finfo(np.float64).eps * scale + 1e-300)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
@pytest.mark.parametrize("name", ["erf", "gelu", "gelu_tanh"])
def test_narrow_floats_go_through_float32(dtype, name, built):
    import ml_dtypes

    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    x = np.linspace(-5, 5, 999).astype(dt)
    got = getattr(A, name)(x)
    assert got.dtype == dt
    want = getattr(A, name)(x.astype(np.float32)).astype(dt)  # one rounding from float32's result
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
    plain = getattr(A, name + "_numpy")(x)
    assert plain.dtype == dt
    # the two float32 results differ by a few float32 ulps of x: after rounding to the narrow type, by
    # at most one of its ulps of x
    narrow_eps = float(ml_dtypes.finfo(dt).eps)
    err = np.abs(got.astype(np.float64) - plain.astype(np.float64))
    assert np.all(err <= narrow_eps * np.abs(x.astype(np.float64)) + 1e-30)


def test_strided_and_broadcast_inputs(built):
    base = _input((64, 130), np.float32)
    x = base[::3, 1::2]  # neither axis contiguous
    bias = np.random.default_rng(2).normal(size=(1, x.shape[1])).astype(np.float32)
    np.testing.assert_array_equal(A.gelu(x, bias), A.gelu(np.ascontiguousarray(x), bias.reshape(-1)))
    # a bias broadcast other than along the last axis is added first
    col = np.random.default_rng(3).normal(size=(x.shape[0], 1)).astype(np.float32)
    np.testing.assert_array_equal(A.gelu_tanh(x, col), A.gelu_tanh(x + col))
    # a float64 bias on float32 input: computed in float32
    assert A.gelu(x, bias.astype(np.float64)).dtype == np.float32


def test_threads_do_not_change_results(built):
    x = _input((300, 3072), np.float32)  # past PARALLEL_MIN
    b = np.random.default_rng(5).normal(size=3072).astype(np.float32)
    for f in (A.gelu, A.gelu_tanh):
        np.testing.assert_array_equal(f(x, b, threads=1), f(x, b, threads=2))
    np.testing.assert_array_equal(A.erf(x, threads=1), A.erf(x, threads=3))


def test_c_entry_points_check_their_arrays(built):
    mod = compiled("_activation")
    x = np.zeros((4, 6), np.float32)
    with pytest.raises(ValueError):
        mod.gelu(x, None, np.zeros((4, 5), np.float32), 1)
    with pytest.raises(ValueError):
        mod.gelu(x, np.zeros(5, np.float32), np.zeros((4, 6), np.float32), 1)
    with pytest.raises(TypeError):
        mod.gelu(x, None, np.zeros((4, 6), np.float64), 1)
    with pytest.raises(ValueError):
        mod.erf(x[:, ::2], np.zeros((4, 3), np.float32), 1)
    with pytest.raises(TypeError):
        mod.erf(x.astype(np.int32), np.zeros((4, 6), np.int32), 1)
    read_only = np.zeros((4, 6), np.float32)
    read_only.setflags(write=False)
    with pytest.raises(TypeError):
        mod.erf(x, read_only, 1)


def test_numpy_path_when_switched_off(no_perf):
    x = _input((33, 1031), np.float32)
    np.testing.assert_array_equal(A.gelu(x), A.gelu_numpy(x))
    np.testing.assert_array_equal(A.erf(x), A.erf_numpy(x))


# ---- the ops ---------------------------------------------------------------------------------------


def _one_node(op, x, bias, domain="com.microsoft", opset=17, **attrs):
    inits = [numpy_helper.from_array(bias, "B")] if bias is not None else []
    node = helper.make_node(op, ["X", "B"] if bias is not None else ["X"], ["Y"], domain=domain, **attrs)
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        inits,
    )
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)]
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = 8 if opset < 20 else 9
    return m.SerializeToString()


@pytest.mark.parametrize(
    "op,with_bias,domain,opset,attrs",
    [
        ("BiasGelu", True, "com.microsoft", 17, {}),
        ("Gelu", False, "com.microsoft", 17, {}),
        ("FastGelu", True, "com.microsoft", 17, {}),
        ("FastGelu", False, "com.microsoft", 17, {}),
        ("Gelu", False, "", 20, {}),
        ("Gelu", False, "", 20, {"approximate": "tanh"}),
    ],
)
def test_gelu_ops_against_onnxruntime(op, with_bias, domain, opset, attrs):
    rng = np.random.default_rng(3)
    x = (rng.normal(size=(2, 50, 768)) * 2).astype(np.float32)
    b = rng.normal(size=768).astype(np.float32) if with_bias else None
    model = _one_node(op, x, b, domain, opset, **attrs)
    got = onyx.InferenceSession(model).run(None, {"X": x})[0]
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
    v = x if b is None else x + b
    # onnxruntime's own float32 approximations: a few ulps of v apart from ours
    np.testing.assert_array_less(np.abs(got - want), 8 * EPS32 * np.maximum(np.abs(v), 1e-3))


def test_erf_op_integer_and_float16_inputs():
    from onyx.ops.math.erf import erf_9

    x = np.array([-2, -1, 0, 1, 3], np.int32)
    np.testing.assert_array_equal(erf_9(x), np.array([math.erf(v) for v in x.tolist()]).astype(np.int32))
    h = np.linspace(-3, 3, 300).astype(np.float16)
    got = erf_9(h)
    assert got.dtype == np.float16
    want = np.array([math.erf(v) for v in h.astype(np.float64).tolist()])
    np.testing.assert_allclose(got.astype(np.float64), want, atol=float(np.finfo(np.float16).eps))
