"""onyx's quantizer against onnxruntime's on the same model, settings and calibration data: the same
initializers (scales and zero points bit for bit), the same nodes and names, and the same outputs."""

from __future__ import annotations

import logging

import numpy as np
import onnxruntime as ort
import pytest

pytest.importorskip("onnxruntime.quantization")
import onnxruntime.quantization as oq  # noqa: E402

import onyx  # noqa: E402
import onyx.quantization as yq  # noqa: E402

from ._models import ListReader, batches, cnn_model, initializers, mixed_model, node_signature  # noqa: E402

logging.getLogger().setLevel(logging.ERROR)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return cnn_model(tmp_path_factory.mktemp("q") / "cnn.onnx")


def _same_files(a, b):
    ia, ib = initializers(a), initializers(b)
    assert set(ia) == set(ib)
    for name in ia:
        assert ia[name].dtype == ib[name].dtype, name
        assert ia[name].shape == ib[name].shape, name
        np.testing.assert_array_equal(ia[name], ib[name], err_msg=name)
    assert node_signature(a) == node_signature(b)


STATIC_CASES = [
    (fmt, per_channel, act, sym)
    for fmt in ("QDQ", "QOperator")
    for per_channel in (False, True)
    for act in ("QInt8", "QUInt8")
    for sym in (False, True)
    if fmt == "QDQ" or not sym
]


@pytest.mark.parametrize("fmt,per_channel,act,sym", STATIC_CASES)
def test_static_minmax_matches_onnxruntime(model, tmp_path, fmt, per_channel, act, sym):
    data = batches()
    ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
    extra = {"ActivationSymmetric": sym}
    oq.quantize_static(
        model,
        theirs,
        ListReader(data),
        quant_format=oq.QuantFormat[fmt],
        per_channel=per_channel,
        activation_type=oq.QuantType[act],
        extra_options=dict(extra),
    )
    yq.quantize_static(
        model,
        ours,
        ListReader(data),
        quant_format=yq.QuantFormat[fmt],
        per_channel=per_channel,
        activation_type=yq.QuantType[act],
        extra_options=dict(extra),
    )
    _same_files(ours, theirs)
    # (b) onyx's model runs in onnxruntime exactly as onnxruntime's own does, and in onyx the same
    feeds = batches(1, 3, whole=True, seed=50)[0]
    want = ort.InferenceSession(str(theirs)).run(None, feeds)[0]
    np.testing.assert_array_equal(ort.InferenceSession(str(ours)).run(None, feeds)[0], want)
    got = onyx.InferenceSession(str(ours)).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "extra",
    [
        {"WeightSymmetric": False},
        {"CalibMovingAverage": True},
        {"CalibMovingAverage": True, "CalibMovingAverageConstant": 0.5},
        {"AddQDQPairToWeight": True},
        {"QDQKeepRemovableActivations": True},
        {"ForceQuantizeNoInputCheck": True},
        {
            "TensorQuantOverrides": {
                "x": [{"rmin": np.float32(-2.0), "rmax": np.float32(3.0)}],
                "w1": [{"symmetric": False}],
            }
        },
    ],
)
def test_static_extra_options_match_onnxruntime(model, tmp_path, extra):
    data = batches()
    ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
    oq.quantize_static(model, theirs, ListReader(data), extra_options=dict(extra))
    yq.quantize_static(model, ours, ListReader(data), extra_options=dict(extra))
    _same_files(ours, theirs)


def test_reduce_range_and_uint8_weights_match(model, tmp_path):
    data = batches()
    ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
    oq.quantize_static(
        model,
        theirs,
        ListReader(data),
        reduce_range=True,
        per_channel=True,
        activation_type=oq.QuantType.QUInt8,
        weight_type=oq.QuantType.QUInt8,
    )
    yq.quantize_static(
        model,
        ours,
        ListReader(data),
        reduce_range=True,
        per_channel=True,
        activation_type=yq.QuantType.QUInt8,
        weight_type=yq.QuantType.QUInt8,
    )
    _same_files(ours, theirs)


@pytest.mark.parametrize(
    "per_channel,weight,reduce",
    [
        (False, "QInt8", False),
        (True, "QInt8", False),
        (False, "QUInt8", True),
        (True, "QUInt8", True),
    ],
)
def test_dynamic_matches_onnxruntime(model, tmp_path, per_channel, weight, reduce):
    ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
    oq.quantize_dynamic(
        model, theirs, per_channel=per_channel, weight_type=oq.QuantType[weight], reduce_range=reduce
    )
    yq.quantize_dynamic(
        model, ours, per_channel=per_channel, weight_type=yq.QuantType[weight], reduce_range=reduce
    )
    _same_files(ours, theirs)
    feeds = batches(1, 3, whole=False, seed=7)[0]
    want = ort.InferenceSession(str(theirs)).run(None, feeds)[0]
    np.testing.assert_array_equal(ort.InferenceSession(str(ours)).run(None, feeds)[0], want)
    # onyx's integer kernels are exact; the float Mul/Add that follow round alike up to a few ulps
    got = onyx.InferenceSession(str(ours)).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_random_weights_outputs_close_to_onnxruntime(tmp_path):
    """With weights and data that are not exact, onyx's activations differ from onnxruntime's by float32
    rounding; scales then differ by an ulp or so and outputs by at most about one output step."""
    model = cnn_model(tmp_path / "r.onnx", dyadic=False)
    data = batches(whole=False)
    ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
    oq.quantize_static(model, theirs, ListReader(data), activation_type=oq.QuantType.QUInt8)
    yq.quantize_static(model, ours, ListReader(data), activation_type=yq.QuantType.QUInt8)
    ia, ib = initializers(ours), initializers(theirs)
    for name in ia:
        if name.endswith("_scale"):
            np.testing.assert_allclose(ia[name], ib[name], rtol=1e-6, err_msg=name)
    feeds = data[0]
    want = ort.InferenceSession(str(theirs)).run(None, feeds)[0]
    got = ort.InferenceSession(str(ours)).run(None, feeds)[0]
    step = float(ib["y_scale"])
    assert np.abs(got - want).max() <= 2 * step


def test_onyx_model_input_and_external_data(model, tmp_path):
    out = tmp_path / "ext.onnx"
    yq.quantize_dynamic(onyx.load(model), out, use_external_data_format=True)
    assert (tmp_path / "ext.onnx.data").exists()
    feeds = batches(1, 2, whole=False)[0]
    ref = tmp_path / "ref.onnx"
    yq.quantize_dynamic(model, ref)
    np.testing.assert_array_equal(
        ort.InferenceSession(str(out)).run(None, feeds)[0], ort.InferenceSession(str(ref)).run(None, feeds)[0]
    )


def test_quantize_with_configs(model, tmp_path):
    data = batches()
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    yq.quantize(model, a, yq.StaticQuantConfig(ListReader(data), per_channel=True))
    yq.quantize_static(model, b, ListReader(data), per_channel=True)
    _same_files(a, b)
    yq.quantize(model, a, yq.DynamicQuantConfig())
    yq.quantize_dynamic(model, b)
    _same_files(a, b)


def test_get_qdq_config_matches_onnxruntime(model, tmp_path):
    data = batches()
    ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
    oq.quantize(model, theirs, oq.get_qdq_config(model, ListReader(data), per_channel=True))
    yq.quantize(model, ours, yq.get_qdq_config(model, ListReader(data), per_channel=True))
    _same_files(ours, theirs)


def test_nodes_to_exclude_and_op_types(model, tmp_path):
    data = batches()
    for kw in (
        {"nodes_to_exclude": ["conv2", "matmul"]},
        {"op_types_to_quantize": ["Conv"]},
        {"nodes_to_quantize": ["gemm"]},
    ):
        ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
        oq.quantize_static(model, theirs, ListReader(data), **kw)
        yq.quantize_static(model, ours, ListReader(data), **kw)
        _same_files(ours, theirs)


def test_int16_qdq_matches_onnxruntime(model, tmp_path):
    data = batches()
    ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
    oq.quantize_static(
        model, theirs, ListReader(data), activation_type=oq.QuantType.QUInt16, weight_type=oq.QuantType.QInt16
    )
    yq.quantize_static(
        model, ours, ListReader(data), activation_type=yq.QuantType.QUInt16, weight_type=yq.QuantType.QInt16
    )
    ia, ib = initializers(ours), initializers(theirs)
    assert set(ia) == set(ib)
    for name in ia:
        np.testing.assert_array_equal(ia[name], ib[name], err_msg=name)


@pytest.mark.parametrize("mode", ["QDQ", "QDQ-symmetric", "QOperator", "dynamic"])
def test_mixed_operators_written_like_onnxruntime(tmp_path, mode):
    """Op types with their own rules (normalizations, Clip, pooling, Softmax, Sigmoid, Concat...): the same
    nodes and initializers as onnxruntime; values agree up to the float32 rounding of activations."""
    model = mixed_model(tmp_path / "mixed.onnx")
    data = [{"x": np.random.default_rng(i).normal(size=(2, 3, 8, 8)).astype(np.float32)} for i in range(3)]
    ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
    for lib, out in ((oq, theirs), (yq, ours)):
        if mode == "dynamic":
            lib.quantize_dynamic(model, out, per_channel=True)
        else:
            lib.quantize_static(
                model,
                out,
                ListReader(data),
                per_channel=True,
                quant_format=lib.QuantFormat.QOperator if mode == "QOperator" else lib.QuantFormat.QDQ,
                activation_type=lib.QuantType.QUInt8 if mode != "QDQ-symmetric" else lib.QuantType.QInt8,
                extra_options={"ActivationSymmetric": mode == "QDQ-symmetric"},
            )
    assert node_signature(ours) == node_signature(theirs)
    ia, ib = initializers(ours), initializers(theirs)
    assert set(ia) == set(ib)
    for name in ia:
        a, b = ia[name].astype(np.float64), ib[name].astype(np.float64)
        if name.endswith("_zero_point") or ia[name].dtype.kind in "iu":
            assert np.abs(a - b).max(initial=0) <= 1, name  # a range an ulp apart can round the other way
        else:
            np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=name)
    feeds = data[0]
    want = ort.InferenceSession(str(theirs)).run(None, feeds)[0]
    got = ort.InferenceSession(str(ours)).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, atol=0.02)
    if mode != "QOperator":  # onyx lacks com.microsoft QLinearSoftmax / QLinearGlobalAveragePool
        np.testing.assert_allclose(onyx.InferenceSession(str(ours)).run(None, feeds)[0], want, atol=0.02)
