"""GELU (erf form): the compiled loop (``perf`` extra) gives what the numpy path gives, within two
float32 ulps, with and without a bias, over sizes that leave partial blocks and rows, special values,
and through the BiasGelu / Gelu kernels against onnxruntime."""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from onyx.ops.math._erf import JIT_MIN, gelu
from tests.perf.test_fast_paths import _run_both

SPECIAL = np.array(
    [0.0, -0.0, np.nan, np.inf, 1.0, -1.0, 0.99999994, 1.0000001, 4.0, -4.0, 5.5, -5.5, 30.0, 1e-30, -1e-30],
    dtype=np.float32,
)


def _both(x, bias, monkeypatch):
    pytest.importorskip("numba")
    assert x.size >= JIT_MIN  # else both calls take the numpy path
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    plain = gelu(x, bias)
    monkeypatch.delenv("ONYX_NO_PERF")
    return gelu(x, bias), plain


@pytest.mark.parametrize("shape", [(40000,), (33, 1031), (197, 3072), (5000, 7), (2, 3, 6001)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_gelu_jit_matches_numpy(shape, with_bias, monkeypatch):
    rng = np.random.default_rng(sum(shape))
    x = (rng.normal(size=shape) * 3).astype(np.float32)
    x.reshape(-1)[: SPECIAL.size] = SPECIAL[: min(SPECIAL.size, x.size)]
    bias = rng.normal(size=shape[-1]).astype(np.float32) if with_bias else None
    with np.errstate(invalid="ignore"):
        fast, plain = _both(x, bias, monkeypatch)
    assert fast.dtype == np.float32 and fast.shape == x.shape
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(plain))
    np.testing.assert_allclose(fast, plain, rtol=2.5e-7, atol=3e-7)
    # and both against the definition in double precision
    v = (x if bias is None else x + bias).astype(np.float64).reshape(-1)
    want = np.array([0.5 * t * (1 + math.erf(t / math.sqrt(2))) if np.isfinite(t) else np.nan for t in v])
    ok = np.isfinite(want)
    np.testing.assert_allclose(fast.reshape(-1)[ok], want[ok], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["BiasGelu", "Gelu"])
def test_gelu_kernels_jit_match_numpy_and_onnxruntime(op, monkeypatch):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 50, 768)).astype(np.float32)  # 76,800 elements: the compiled loop
    b = rng.normal(size=768).astype(np.float32)
    model = _one_node(op, x, b if op == "BiasGelu" else None)
    fast, plain = _run_both(model, {"X": x}, monkeypatch)
    np.testing.assert_allclose(fast[0], plain[0], rtol=2.5e-7, atol=3e-7)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
    np.testing.assert_allclose(fast[0], want, rtol=1e-5, atol=1e-6)


def _gelu_tanh_f64(v):
    v = v.astype(np.float64)
    return 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))


@pytest.mark.parametrize("shape", [(40000,), (33, 1031), (2, 3, 6001)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_fast_gelu_jit_matches_numpy_and_definition(shape, with_bias, monkeypatch):
    """FastGelu's compiled loop computes v / (1 + exp(-2t)), the same function as the numpy path's
    0.5 v (1 + tanh t): both within float32 rounding of the definition in double precision."""
    rng = np.random.default_rng(sum(shape) + 1)
    x = (rng.normal(size=shape) * 4).astype(np.float32)
    x.reshape(-1)[: SPECIAL.size] = SPECIAL
    x.reshape(-1)[SPECIAL.size : SPECIAL.size + 3] = [-np.inf, -60.0, 95.0]
    bias = rng.normal(size=shape[-1]).astype(np.float32) if with_bias else None
    model = _one_node("FastGelu", x, bias)
    feeds = {"X": x}
    with np.errstate(invalid="ignore", over="ignore"):
        fast, plain = _run_both(model, feeds, monkeypatch)
    np.testing.assert_array_equal(np.isnan(fast[0]), np.isnan(plain[0]))
    v = x if bias is None else x + bias
    with np.errstate(invalid="ignore", over="ignore"):
        want = _gelu_tanh_f64(v)
    ok = np.isfinite(want)
    for got in (fast[0], plain[0]):
        np.testing.assert_allclose(got[ok], want[ok], rtol=1e-6, atol=2e-6)
    np.testing.assert_array_equal(fast[0][~ok & ~np.isnan(want)], want[~ok & ~np.isnan(want)])


def _one_node(op, x, bias):
    inits = [numpy_helper.from_array(bias, "B")] if bias is not None else []
    node = helper.make_node(op, ["X", "B"] if bias is not None else ["X"], ["Y"], domain="com.microsoft")
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = 8
    return m.SerializeToString()


def test_fast_gelu_jit_against_onnxruntime(monkeypatch):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 50, 768)).astype(np.float32) * 2
    b = rng.normal(size=768).astype(np.float32)
    model = _one_node("FastGelu", x, b)
    fast, _ = _run_both(model, {"X": x}, monkeypatch)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
    np.testing.assert_allclose(fast[0], want, rtol=1e-5, atol=1e-5)
