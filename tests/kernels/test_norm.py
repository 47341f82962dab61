"""onyx.kernels.norm: layer normalisation of rows in the compiled loop (onyx.kernels._norm) against
the numpy path and a float64 evaluation (skip, bias, gamma, beta, the simplified form, the kept sum,
edge shapes, strided inputs, NaN/inf/huge values), and the ops that call it against onnxruntime.

Tolerances. Both paths compute s = x + skip + bias in the same order (the same bits). The compiled
path sums in float64, so its only float32 roundings are the mean's and inv_std's and the final
(s - mean) * inv * gamma + beta: within a few ulps of |y_n gamma| + |beta| (y_n the normalised value)
plus |mean| inv |gamma| (the rounded mean). The numpy path sums n float32 terms (|error| <= n eps
sum|terms|): the mean is off by up to n eps mean|s|, the variance relatively by (n + 3) eps.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx import config
from onyx.kernels import norm as N
from onyx.kernels._loader import compiled
from onyx.ops.nn._norm import spans

MS = "com.microsoft"


@pytest.fixture
def built():
    if compiled("_norm") is None:
        pytest.skip("onyx.kernels._norm was not built (or ONYX_NO_PERF is set): only numpy runs")


def _inputs(rows, n, dtype, seed=0):
    rng = np.random.default_rng(seed + rows * 31 + n)

    def r(*shape, loc=0.0):
        return (rng.normal(size=shape) + loc).astype(dtype)

    return r(rows, n, loc=0.5), r(rows, n), r(n), r(n), r(n)


def _exact(x, skip, bias, gamma, beta, eps, simplified):
    """(s, y_n, mean, inv, y) in float64 from s as float32/float64 arithmetic gives it."""
    s = x
    if skip is not None:
        s = s + skip
    if bias is not None:
        s = s + bias
    s64 = s.astype(np.float64)
    mean = np.zeros((s.shape[0], 1)) if simplified else s64.mean(1, keepdims=True)
    var = np.square(s64 - mean).mean(1, keepdims=True)
    inv = 1 / np.sqrt(var + eps)
    yn = (s64 - mean) * inv
    y = yn * (1.0 if gamma is None else gamma.astype(np.float64))
    if beta is not None:
        y = y + beta.astype(np.float64)
    return s, yn, mean, inv, y


def _check_against_exact(got, x, skip, bias, gamma, beta, eps, simplified, ulps=4):
    s, yn, mean, inv, y = _exact(x, skip, bias, gamma, beta, eps, simplified)
    n = x.shape[1]
    e = float(np.finfo(x.dtype).eps)
    # the float64 sums of n terms: within n eps64 of their value (negligible next to float32's eps)
    sum_eps = (n + 4) * float(np.finfo(np.float64).eps)
    mean_err = e * np.abs(mean) + sum_eps * np.abs(s.astype(np.float64)).mean(1, keepdims=True)
    g = 1.0 if gamma is None else np.abs(gamma.astype(np.float64))
    b = 0.0 if beta is None else np.abs(beta.astype(np.float64))
    bound = ulps * (e + sum_eps) * (np.abs(yn) * g + b) + ulps * mean_err * inv * g
    assert np.all(np.abs(got.y - y) <= bound)
    assert np.all(np.abs(got.mean - mean) <= mean_err)
    np.testing.assert_allclose(got.inv_std, inv, rtol=e + sum_eps)
    if got.s is not None:
        np.testing.assert_array_equal(got.s, s)


CASES = [(1, 1), (1, 768), (7, 33), (128, 768), (3, 1), (5, 4097), (40, 9000)]


@pytest.mark.parametrize("rows,n", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("simplified", [False, True])
@pytest.mark.parametrize(
    "parts", ["none", "gamma", "gamma+beta", "skip+bias+gamma+beta", "skip", "bias+gamma"]
)
def test_compiled_matches_exact_and_numpy(rows, n, dtype, simplified, parts, built):
    x, skip, bias, gamma, beta = _inputs(rows, n, dtype)
    kw = dict(
        skip=skip if "skip" in parts else None,
        bias=bias if "bias" in parts else None,
        epsilon=1e-5,
        simplified=simplified,
        keep_sum=True,
    )
    g = gamma if "gamma" in parts else None
    b = beta if "beta" in parts else None
    got = N.layer_norm_rows(x, g, b, **kw)
    assert got.y.dtype == dtype and got.mean.shape == (rows, 1) and got.inv_std.shape == (rows, 1)
    _check_against_exact(got, x, kw["skip"], kw["bias"], g, b, 1e-5, simplified)
    plain = N.layer_norm_rows_numpy(x, g, b, **kw)
    np.testing.assert_array_equal(got.s, plain.s)
    # the numpy path's float32 sums (see the module docstring)
    e = float(np.finfo(dtype).eps)
    s, yn, _, inv, _ = _exact(x, kw["skip"], kw["bias"], g, b, 1e-5, simplified)
    mean_abs = np.abs(s.astype(np.float64)).mean(1, keepdims=True)
    gg = 1.0 if g is None else np.abs(g.astype(np.float64))
    bb = 0.0 if b is None else np.abs(b.astype(np.float64))
    bound = (n + 8) * e * (mean_abs * inv + np.abs(yn)) * gg + 2 * e * bb
    assert np.all(np.abs(got.y.astype(np.float64) - plain.y) <= bound)


def test_strided_inputs_and_no_kept_sum(built):
    x, skip, bias, gamma, beta = _inputs(16, 96, np.float32)
    xs, sks = x[::2, ::3], skip[::2, ::3]
    got = N.layer_norm_rows(xs, gamma[::3], beta[::3], skip=sks, bias=bias[::3], epsilon=1e-6)
    assert got.s is None
    want = N.layer_norm_rows(
        np.ascontiguousarray(xs), gamma[::3].copy(), beta[::3].copy(), skip=sks.copy(), bias=bias[::3].copy(),
        epsilon=1e-6,
    )  # fmt: skip
    np.testing.assert_array_equal(got.y, want.y)
    # vectors with leading 1s and of another float type
    g2 = gamma.reshape(1, 96).astype(np.float64)
    np.testing.assert_array_equal(
        N.layer_norm_rows(x, g2, epsilon=1e-5).y, N.layer_norm_rows(x, gamma, epsilon=1e-5).y
    )


def test_empty_rows(built):
    for shape in [(0, 5), (4, 0)]:
        x = np.zeros(shape, np.float32)
        got = N.layer_norm_rows(x, None, epsilon=1e-5, keep_sum=True)
        assert got.y.shape == shape and got.s.shape == shape and got.mean.shape == (shape[0], 1)


def test_special_values(built):
    x, _, _, gamma, beta = _inputs(6, 40, np.float32)
    x[0, 3] = np.nan
    x[1, 4] = np.inf
    x[2] = 1e30  # a constant huge row: its float32 squares would overflow; float64 sums do not
    x[3] = x[3] * 1e30
    x[4] = -0.0
    got = N.layer_norm_rows(x, gamma, beta, epsilon=1e-5)
    assert np.isnan(got.y[0]).all() and np.isnan(got.y[1]).all()
    np.testing.assert_allclose(got.y[2], beta, rtol=0, atol=0)  # zero deviation: beta
    assert got.inv_std[2, 0] == np.float32(1 / np.sqrt(1e-5))
    _check_against_exact(
        N.layer_norm_rows(x[3:], gamma, beta, epsilon=1e-5), x[3:], None, None, gamma, beta, 1e-5, False
    )


def test_threads_do_not_change_results(built):
    x, skip, bias, gamma, beta = _inputs(256, 768, np.float32)
    one = N.layer_norm_rows(x, gamma, beta, skip=skip, bias=bias, epsilon=1e-12, threads=1)
    two = N.layer_norm_rows(x, gamma, beta, skip=skip, bias=bias, epsilon=1e-12, threads=2)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b) if a is not None else None


def test_bad_shapes_raise(built):
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError):
        N.layer_norm_rows(x, np.ones(5, np.float32), epsilon=1e-5)
    with pytest.raises(ValueError):
        N.layer_norm_rows(x, None, np.ones(4, np.float32), epsilon=1e-5)
    with pytest.raises(ValueError):
        N.layer_norm_rows(x, skip=np.zeros((1, 4), np.float32), epsilon=1e-5)
    with pytest.raises(ValueError):
        N.layer_norm_rows(x.astype(np.float16), epsilon=1e-5)
    mod = compiled("_norm")
    y, m = np.zeros((3, 4), np.float32), np.zeros(3, np.float32)
    with pytest.raises(ValueError):
        mod.norm_rows(x, None, None, np.ones(3, np.float32), None, 1e-5, False, y, None, m, m.copy(), 1)
    with pytest.raises(ValueError):
        mod.norm_rows(x, None, None, None, None, 1e-5, False, y, None, np.zeros(2, np.float32), m, 1)
    with pytest.raises(TypeError):
        mod.norm_rows(x, None, None, None, None, 1e-5, False, y.astype(np.float64), None, m, m.copy(), 1)
    with pytest.raises(ValueError):
        mod.norm_rows(x, None, None, None, None, 1e-5, False, np.zeros((3, 8), np.float32)[:, ::2], None, m,
                      m.copy(), 1)  # fmt: skip


def test_spans():
    assert spans(np.zeros(8), (8,))
    assert spans(np.zeros((1, 1, 8)), (8,))
    assert spans(np.zeros((4, 6)), (4, 6))
    assert spans(np.zeros(6), (1, 6))
    assert not spans(np.zeros((6, 1, 1)), (1, 6))  # same size, but one value per row: not a row's
    assert not spans(np.zeros(8), (2, 4))
    assert spans(None, (3,))


# ---- the ops: compiled and numpy paths, and onnxruntime ----------------------------------------------

ELEM = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16}


def _model(op, x_shape, inits, outputs, dtype=np.float32, domain="", opset=17, extra_inputs=(), **attrs):
    rng = np.random.default_rng(sum(x_shape))
    names = ["X", *extra_inputs]
    inputs = [helper.make_tensor_value_info(n, ELEM[dtype], list(x_shape)) for n in names]
    feeds = {n: rng.normal(size=x_shape).astype(dtype) for n in names}
    tensors = []
    for name, shape in inits:
        names.append(name)
        if name:
            tensors.append(numpy_helper.from_array(rng.normal(size=shape).astype(dtype), name))
    outs = [helper.make_tensor_value_info(f"Y{i}", ELEM[dtype], None) for i in range(outputs)]
    node = helper.make_node(op, names, [o.name for o in outs], domain=domain, **attrs)
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)]
    m = helper.make_model(helper.make_graph([node], "norm", inputs, outs, tensors), opset_imports=opsets)
    m.ir_version = 8
    return m.SerializeToString(), feeds


def _run_both(model, feeds, monkeypatch):
    """(outputs on the compiled path, outputs with ONYX_NO_PERF=1)."""
    fast = onyx.InferenceSession(model).run(None, feeds)
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    config.reload()
    plain = onyx.InferenceSession(model).run(None, feeds)
    monkeypatch.delenv("ONYX_NO_PERF")
    config.reload()
    return fast, plain


def _check(model, feeds, monkeypatch, tol=1e-5, ort_check=True):
    # rows of up to 768 unit normals: the numpy path's float32 sums are within ~(n + 8) eps, 1e-4
    fast, plain = _run_both(model, feeds, monkeypatch)
    for a, b in zip(fast, plain):
        if a is None or b is None:  # SkipSimplifiedLayerNormalization's mean: never produced
            assert a is None and b is None
            continue
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol, atol=tol)
    if ort_check:
        want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
        for a, b in zip(fast, want):
            if a is None:
                continue
            np.testing.assert_allclose(
                a.astype(np.float64), b.astype(np.float64), rtol=10 * tol, atol=10 * tol
            )


@pytest.mark.parametrize(
    "x_shape,axis,scale_shape",
    [((2, 5, 64), -1, (64,)), ((3, 4, 6), 1, (4, 6)), ((2, 7, 16), -1, (1, 16)), ((1, 768), -1, (768,)),
     ((3, 4, 6), 1, (4, 1))],
)  # fmt: skip
@pytest.mark.parametrize("outputs", [1, 3])
def test_layer_normalization(x_shape, axis, scale_shape, outputs, monkeypatch):
    model, feeds = _model(
        "LayerNormalization",
        x_shape,
        [("S", scale_shape), ("B", scale_shape)],
        outputs,
        axis=axis,
        epsilon=1e-5,
    )
    _check(model, feeds, monkeypatch)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float16, 2e-3)])
def test_layer_normalization_other_dtypes(dtype, tol, monkeypatch):
    model, feeds = _model("LayerNormalization", (4, 32), [("S", (32,)), ("", None)], 1, dtype=dtype)
    _check(model, feeds, monkeypatch, tol=tol, ort_check=False)


@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("with_beta", [False, True])
@pytest.mark.parametrize("outputs", [1, 2, 4])
def test_skip_layer_normalization(with_bias, with_beta, outputs, monkeypatch):
    inits = [("G", (48,)), ("Be" if with_beta else "", (48,)), ("Bi" if with_bias else "", (48,))]
    model, feeds = _model(
        "SkipLayerNormalization", (2, 9, 48), inits, outputs, domain=MS, extra_inputs=("K",), epsilon=1e-12
    )
    _check(model, feeds, monkeypatch)


@pytest.mark.parametrize("outputs", [1, 4])
def test_skip_simplified_layer_normalization(outputs, monkeypatch):
    inits = [("G", (40,)), ("Bi", (40,))]
    model, feeds = _model(
        "SkipSimplifiedLayerNormalization",
        (3, 40),
        inits,
        outputs,
        domain=MS,
        extra_inputs=("K",),
        epsilon=1e-6,
    )
    _check(model, feeds, monkeypatch)


def test_simplified_layer_normalization(monkeypatch):
    model, feeds = _model(
        "SimplifiedLayerNormalization", (2, 6, 24), [("S", (24,))], 2, axis=-1, epsilon=1e-6
    )
    _check(model, feeds, monkeypatch)


def test_skip_of_another_shape(monkeypatch):
    """A broadcast skip (1, S, H) against (B, S, H): broadcast to the input, same answer on both paths."""
    rng = np.random.default_rng(3)
    inputs = [
        helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 5, 8]),
        helper.make_tensor_value_info("K", TensorProto.FLOAT, [1, 5, 8]),
    ]
    node = helper.make_node("SkipLayerNormalization", ["X", "K", "G"], ["Y"], domain=MS)
    gamma = rng.normal(size=8).astype(np.float32)
    g = helper.make_graph(
        [node],
        "n",
        inputs,
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(gamma, "G")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    feeds = {
        "X": rng.normal(size=(2, 5, 8)).astype(np.float32),
        "K": rng.normal(size=(1, 5, 8)).astype(np.float32),
    }
    fast, plain = _run_both(m.SerializeToString(), feeds, monkeypatch)
    np.testing.assert_allclose(fast[0], plain[0], rtol=1e-5, atol=1e-5)
    x = feeds["X"] + feeds["K"]
    d = x - x.mean(-1, keepdims=True)
    want = d / np.sqrt(np.square(d).mean(-1, keepdims=True) + 1e-12) * gamma
    np.testing.assert_allclose(fast[0], want, rtol=1e-5, atol=1e-5)
