"""Layer normalisation by the compiled row loop (``perf`` extra, used once numba is loaded): the same
results as the numpy path and as onnxruntime for LayerNormalization (axes, statistics outputs, dtypes),
SkipLayerNormalization (bias, beta, all four outputs), and the simplified (RMS) forms."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from onyx.ops.nn._norm import spans
from tests.perf.test_fast_paths import _run_both

MS = "com.microsoft"
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


def _check(model, feeds, monkeypatch, tol=1e-5, ort_check=True):
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
    [((2, 5, 64), -1, (64,)), ((3, 4, 6), 1, (4, 6)), ((2, 7, 16), -1, (1, 16)), ((1, 768), -1, (768,))],
)
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


def test_skip_of_another_shape_goes_the_numpy_way(monkeypatch):
    """A broadcast skip (1, S, H) against (B, S, H) is not the compiled loop's case: same answer anyway."""
    rng = np.random.default_rng(3)
    inputs = [
        helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 5, 8]),
        helper.make_tensor_value_info("K", TensorProto.FLOAT, [1, 5, 8]),
    ]
    node = helper.make_node("SkipLayerNormalization", ["X", "K", "G"], ["Y"], domain=MS)
    g = helper.make_graph(
        [node],
        "n",
        inputs,
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(rng.normal(size=8).astype(np.float32), "G")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    feeds = {
        "X": rng.normal(size=(2, 5, 8)).astype(np.float32),
        "K": rng.normal(size=(1, 5, 8)).astype(np.float32),
    }
    fast, plain = _run_both(m.SerializeToString(), feeds, monkeypatch)
    np.testing.assert_array_equal(fast[0], plain[0])


def test_spans():
    assert spans(np.zeros(8), (8,))
    assert spans(np.zeros((1, 1, 8)), (8,))
    assert spans(np.zeros((4, 6)), (4, 6))
    assert spans(np.zeros(6), (1, 6))
    assert not spans(np.zeros((6, 1, 1)), (1, 6))  # same size, but one value per row: not a row's
    assert not spans(np.zeros(8), (2, 4))
    assert spans(None, (3,))
