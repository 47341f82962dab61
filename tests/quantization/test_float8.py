"""QFLOAT8E4M3FN static quantization against onnxruntime 1.32's: the same initializers byte for byte
(float32 scales, float8 zero points and weights), the same nodes, outputs within one float8 step, and
the same refusals (mixed types, other calibration methods, QOperator, reduce_range).

The models have weights that are multiples of 1/4 and the calibration inputs are whole numbers, so
every float32 sum is exact whatever the order: onyx and onnxruntime calibrate on bit-identical
activations, and the histograms' standard deviations (hence the scales) can be compared exactly.
"""

from __future__ import annotations

import logging

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto
from onnx import helper as h
from onnx import numpy_helper as nh

pytest.importorskip("onnxruntime.quantization")
import onnxruntime.quantization as oq  # noqa: E402

import onyx  # noqa: E402
import onyx.quantization as yq  # noqa: E402
from onyx.errors import InvalidArgument  # noqa: E402
from onyx.errors import NotImplemented as OnyxNotImplemented  # noqa: E402
from onyx.quantization import params  # noqa: E402

from ._models import ListReader, batches, cnn_model, initializers, node_signature  # noqa: E402

logging.getLogger().setLevel(logging.ERROR)

F8 = ml_dtypes.float8_e4m3fn


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    """Conv (+bias), Relu, MaxPool, Conv, Relu, Reshape, Gemm (+bias), MatMul, Add; opset 17."""
    return cnn_model(tmp_path_factory.mktemp("f8") / "cnn.onnx")


def _dense_model(path, opset: int = 19, constant_weight: bool = False) -> str:
    """MatMul -> Relu -> Gemm(+bias): the smallest model with a weight, a folded Relu and a bias."""
    rng = np.random.default_rng(3)

    def init(name, a):
        return nh.from_array((np.round(np.asarray(a) * 4) / 4).astype(np.float32), name)

    w1 = np.ones((8, 16)) if constant_weight else rng.normal(size=(8, 16)) * 0.6
    inits = [init("w1", w1), init("w2", rng.normal(size=(16, 4)) * 0.6), init("b2", rng.normal(size=4))]
    nodes = [
        h.make_node("MatMul", ["x", "w1"], ["a"], name="mm"),
        h.make_node("Relu", ["a"], ["r"], name="relu"),
        h.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="gemm"),
    ]
    graph = h.make_graph(
        nodes,
        "dense",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        inits,
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    return _dense_model(tmp_path_factory.mktemp("f8") / "dense.onnx")


def _dense_batches(n: int = 4, seed: int = 0) -> list[dict]:
    return [
        {"x": np.random.default_rng(seed + i).normal(size=(3, 8)).round().astype(np.float32)}
        for i in range(n)
    ]


def _quantize_both(model, tmp_path, data, **kwargs):
    ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
    extra = kwargs.pop("extra_options", {})
    oq.quantize_static(
        model,
        theirs,
        ListReader(data),
        activation_type=oq.QuantType.QFLOAT8E4M3FN,
        weight_type=oq.QuantType.QFLOAT8E4M3FN,
        calibrate_method=oq.CalibrationMethod.Distribution,
        extra_options=dict(extra),
        **kwargs,
    )
    yq.quantize_static(
        model,
        ours,
        ListReader(data),
        activation_type=yq.QuantType.QFLOAT8E4M3FN,
        weight_type=yq.QuantType.QFLOAT8E4M3FN,
        calibrate_method=yq.CalibrationMethod.Distribution,
        extra_options=dict(extra),
        show_progress=False,
        **kwargs,
    )
    return ours, theirs


def _same_bytes(ours, theirs) -> dict[str, np.ndarray]:
    ia, ib = initializers(ours), initializers(theirs)
    assert set(ia) == set(ib)
    for name in ia:
        assert ia[name].dtype == ib[name].dtype, name
        assert ia[name].shape == ib[name].shape, name
        assert ia[name].tobytes() == ib[name].tobytes(), name
    assert node_signature(ours) == node_signature(theirs)
    assert [(o.domain, o.version) for o in onnx.load(str(ours)).opset_import] == [
        (o.domain, o.version) for o in onnx.load(str(theirs)).opset_import
    ]
    return ia


def _float8_step(values: np.ndarray, scale: float) -> np.ndarray:
    """The spacing of the float8 E4M3FN grid (times ``scale``) at each value: 3 mantissa bits, smallest
    normal exponent -6 (subnormals are spaced 2**-9)."""
    mag = np.abs(values.astype(np.float64)) / scale
    exponent = np.floor(np.log2(np.maximum(mag, 2.0**-6)))
    return scale * 2.0 ** (exponent - 3)


def _ort_run(path, feeds):
    # the graph as written: onnxruntime 1.32's optimizer drops a Relu between float8 Q/DQ pairs as if the
    # zero point 0 were the type's minimum (ActivationSymmetric models), which the ONNX reference does not
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), so).run(None, feeds)[0]


def _outputs_agree(ours, theirs, feeds, out_scale: float) -> None:
    want = _ort_run(theirs, feeds)
    in_ort = _ort_run(ours, feeds)
    np.testing.assert_array_equal(in_ort, want)  # the same model in the same runtime
    got = onyx.InferenceSession(str(ours)).run(None, feeds)[0]
    # onyx and onnxruntime add float32 terms in another order: a value within a few ulps of a float8
    # rounding midpoint at the last QuantizeLinear may go to the neighbouring float8 value, one step away
    step = _float8_step(np.maximum(np.abs(got), np.abs(want)), out_scale)
    assert np.all(np.abs(got.astype(np.float64) - want) <= step), np.abs(got - want).max()


# ------------------------------------------------------------------------------------------------
# the same model as onnxruntime's


@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_gemm_matmul_match_onnxruntime(cnn, tmp_path, per_channel):
    ours, theirs = _quantize_both(cnn, tmp_path, batches(), per_channel=per_channel)
    inits = _same_bytes(ours, theirs)
    model = onnx.load(str(ours))
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 19)]  # converted from 17
    for w in ("w1", "w2", "wg", "wm"):
        assert inits[f"{w}_quantized"].dtype == F8
        assert inits[f"{w}_zero_point"].dtype == F8 and not inits[f"{w}_zero_point"].astype(np.float32).any()
        assert inits[f"{w}_scale"].dtype == np.float32
        assert inits[f"{w}_scale"].shape == (
            (inits[f"{w}_quantized"].shape[1 if w == "wm" else 0],) if per_channel else ()
        )
    ops = {n.name: n.op_type for n in model.graph.node}
    assert ops["pool1"] == "MaxPool" and "r1_DequantizeLinear" in ops and "p1_QuantizeLinear" in ops
    assert ops["b1_DequantizeLinear"] == ops["bg_DequantizeLinear"] == "Cast"  # float biases
    assert "relu1" not in ops  # folded into conv1 (asymmetric activations)
    y_scale = float(inits["y_scale"])
    for seed in (50, 51):
        _outputs_agree(ours, theirs, batches(1, 4, whole=False, seed=seed)[0], y_scale)


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"AddQDQPairToWeight": True},
        {"QuantizeBias": False},
        {"ActivationSymmetric": True},
        {"WeightSymmetric": False, "QDQKeepRemovableActivations": True},
        {"TensorQuantOverrides": {"r": [{"quant_type": "QUInt8"}]}},
    ],
    ids=["default", "qdq-weight", "float-bias", "act-sym", "keep-relu", "uint8-override"],
)
def test_dense_extra_options_match_onnxruntime(dense, tmp_path, extra):
    if "TensorQuantOverrides" in extra:
        ort_extra = {"TensorQuantOverrides": {"r": [{"quant_type": oq.QuantType.QUInt8}]}}
        ours_extra = {"TensorQuantOverrides": {"r": [{"quant_type": yq.QuantType.QUInt8}]}}
    else:
        ort_extra = ours_extra = extra
    data = _dense_batches()
    ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
    common = dict(calibrate_method=oq.CalibrationMethod.Distribution)
    oq.quantize_static(
        dense,
        theirs,
        ListReader(data),
        activation_type=oq.QuantType.QFLOAT8E4M3FN,
        weight_type=oq.QuantType.QFLOAT8E4M3FN,
        extra_options=dict(ort_extra),
        **common,
    )
    yq.quantize_static(
        dense,
        ours,
        ListReader(data),
        activation_type=yq.QuantType.QFLOAT8E4M3FN,
        weight_type=yq.QuantType.QFLOAT8E4M3FN,
        calibrate_method="Distribution",
        extra_options=dict(ours_extra),
        show_progress=False,
    )
    inits = _same_bytes(ours, theirs)
    feeds = {"x": np.random.default_rng(9).normal(size=(5, 8)).astype(np.float32)}
    _outputs_agree(ours, theirs, feeds, float(inits["y_scale"]))


def test_scales_are_the_standard_deviation_ratio(dense, tmp_path):
    ours, _ = _quantize_both(dense, tmp_path, _dense_batches(), per_channel=True)
    inits = initializers(ours)
    values = np.arange(256, dtype=np.uint8).view(F8).astype(np.float64)
    f8_std = np.std(values[np.isfinite(values)])
    w1 = nh.to_array(onnx.load(dense).graph.initializer[0]).astype(np.float64)
    # per channel (MatMul: axis 1): each column's own deviation, to float32 rounding
    np.testing.assert_allclose(inits["w1_scale"], w1.std(axis=0) / f8_std, rtol=1e-6)
    # every stored weight is the nearest float8 value of w / scale (half a step of error at most)
    dq = inits["w1_quantized"].astype(np.float64) * inits["w1_scale"]
    scale = inits["w1_scale"].astype(np.float64)
    assert np.abs(w1 / scale).max() < 448  # no saturation here
    assert np.all(np.abs(dq - w1) <= _float8_step(w1, scale) / 2 + 1e-6 * np.abs(w1))


def test_float8_rounding_matches_onnx_reference():
    """Ties to even, saturation to +-448, subnormals and both signs, against onnx's QuantizeLinear."""
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.normal(size=2000).astype(np.float32) * 300,
            np.array([1.0625, 1.1875, -1.0625, 464.0, 470.0, -1e6, 2.0**-9 * 1.5, 2.0**-10, 0.0], np.float32),
        ]
    )
    scale = np.array(0.75, np.float32)
    node = h.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    graph = h.make_graph(
        [node],
        "q",
        [
            h.make_tensor_value_info("x", TensorProto.FLOAT, None),
            h.make_tensor_value_info("s", TensorProto.FLOAT, []),
        ],
        [h.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, None)],
        [h.make_tensor("z", TensorProto.FLOAT8E4M3FN, [], [0])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 19)])
    want = ReferenceEvaluator(model).run(None, {"x": x, "s": scale})[0]
    got = params.quantize_float8(x, scale)
    assert got.dtype == F8
    assert got.tobytes() == np.asarray(want).astype(F8).tobytes()
    assert not np.isnan(got.astype(np.float32)).any()


# ------------------------------------------------------------------------------------------------
# refusals: onnxruntime's, with onyx's errors


@pytest.mark.parametrize(
    "act,weight",
    [("QUInt8", "QFLOAT8E4M3FN"), ("QInt8", "QFLOAT8E4M3FN"), ("QFLOAT8E4M3FN", "QInt8")],
)
def test_mixed_types_refused(dense, tmp_path, act, weight):
    with pytest.raises(ValueError, match="doesn't support data format"):
        oq.quantize_static(
            dense,
            tmp_path / "o.onnx",
            ListReader(_dense_batches(1)),
            activation_type=oq.QuantType[act],
            weight_type=oq.QuantType[weight],
            calibrate_method=oq.CalibrationMethod.Distribution,
        )
    with pytest.raises(InvalidArgument, match="QFLOAT8E4M3FN must be used for both"):
        yq.quantize_static(
            dense,
            tmp_path / "y.onnx",
            ListReader(_dense_batches(1)),
            activation_type=yq.QuantType[act],
            weight_type=yq.QuantType[weight],
            calibrate_method=yq.CalibrationMethod.Distribution,
            show_progress=False,
        )
    assert not (tmp_path / "y.onnx").exists()


@pytest.mark.parametrize("method", ["MinMax", "Entropy", "Percentile"])
def test_other_calibration_methods_refused(dense, tmp_path, method):
    f8 = dict(activation_type=oq.QuantType.QFLOAT8E4M3FN, weight_type=oq.QuantType.QFLOAT8E4M3FN)
    with pytest.raises(ValueError, match="Only Distribution"):
        oq.quantize_static(
            dense,
            tmp_path / "o.onnx",
            ListReader(_dense_batches(1)),
            calibrate_method=oq.CalibrationMethod[method],
            **f8,
        )
    with pytest.raises(InvalidArgument, match="CalibrationMethod.Distribution"):
        yq.quantize_static(
            dense,
            tmp_path / "y.onnx",
            ListReader(_dense_batches(1)),
            activation_type="QFLOAT8E4M3FN",
            weight_type="QFLOAT8E4M3FN",
            calibrate_method=method,
            show_progress=False,
        )


def test_qoperator_refused(cnn, dense, tmp_path):
    f8 = dict(
        activation_type=oq.QuantType.QFLOAT8E4M3FN,
        weight_type=oq.QuantType.QFLOAT8E4M3FN,
        calibrate_method=oq.CalibrationMethod.Distribution,
        quant_format=oq.QuantFormat.QOperator,
    )
    with pytest.raises(RuntimeError, match="FLOAT8E4M3FN for operator Conv is not supported"):
        oq.quantize_static(cnn, tmp_path / "o.onnx", ListReader(batches(1)), **f8)
    # without Conv onnxruntime writes com.microsoft QLinearMatMul / QGemm that it cannot load itself
    oq.quantize_static(dense, tmp_path / "o2.onnx", ListReader(_dense_batches(1)), **f8)
    with pytest.raises(Exception, match="QLinearMatMul"):
        ort.InferenceSession(str(tmp_path / "o2.onnx"))
    for model, data in ((cnn, batches(1)), (dense, _dense_batches(1))):
        with pytest.raises(OnyxNotImplemented, match="QDQ only"):
            yq.quantize_static(
                model,
                tmp_path / "y.onnx",
                ListReader(data),
                activation_type="QFLOAT8E4M3FN",
                weight_type="QFLOAT8E4M3FN",
                calibrate_method="Distribution",
                quant_format="QOperator",
                show_progress=False,
            )


def test_reduce_range_refused(dense, tmp_path):
    with pytest.raises(RuntimeError, match="reduce_range=True for float 8"):
        oq.quantize_static(
            dense,
            tmp_path / "o.onnx",
            ListReader(_dense_batches(1)),
            reduce_range=True,
            activation_type=oq.QuantType.QFLOAT8E4M3FN,
            weight_type=oq.QuantType.QFLOAT8E4M3FN,
            calibrate_method=oq.CalibrationMethod.Distribution,
        )
    with pytest.raises(InvalidArgument, match="reduce_range"):
        yq.quantize_static(
            dense,
            tmp_path / "y.onnx",
            ListReader(_dense_batches(1)),
            reduce_range=True,
            activation_type="QFLOAT8E4M3FN",
            weight_type="QFLOAT8E4M3FN",
            calibrate_method="Distribution",
            show_progress=False,
        )


def test_constant_weight_refused_by_name(tmp_path):
    """A constant weight has no spread to scale by (onnxruntime writes a zero scale): onyx says which."""
    model = _dense_model(tmp_path / "const.onnx", constant_weight=True)
    with pytest.raises(InvalidArgument, match="initializer 'w1'.*standard deviation 0"):
        yq.quantize_static(
            model,
            tmp_path / "y.onnx",
            ListReader(_dense_batches(1)),
            activation_type="QFLOAT8E4M3FN",
            weight_type="QFLOAT8E4M3FN",
            calibrate_method="Distribution",
            show_progress=False,
        )
    assert not (tmp_path / "y.onnx").exists()


def test_float8_override_needs_a_distribution(dense, tmp_path):
    extra = {"TensorQuantOverrides": {"r": [{"quant_type": "QFLOAT8E4M3FN"}]}}
    with pytest.raises(InvalidArgument, match="'r'.*Distribution"):
        yq.quantize_static(
            dense,
            tmp_path / "y.onnx",
            ListReader(_dense_batches(1)),
            extra_options=extra,
            show_progress=False,
        )


def test_dynamic_float8_refused(dense, tmp_path):
    with pytest.raises(InvalidArgument, match="QInt8 and QUInt8"):
        yq.quantize_dynamic(dense, tmp_path / "y.onnx", weight_type="QFLOAT8E4M3FN")


def test_softmax_output_refused(tmp_path):
    """A Softmax output gets the fixed range [0, 1], no distribution: onnxruntime fails on it (an
    AttributeError), onyx says which tensor."""
    rng = np.random.default_rng(0)
    graph = h.make_graph(
        [
            h.make_node("MatMul", ["x", "w"], ["a"], name="mm"),
            h.make_node("Softmax", ["a"], ["y"], name="sm"),
        ],
        "softmax",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        [nh.from_array(rng.normal(size=(8, 4)).astype(np.float32), "w")],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 19)])
    model.ir_version = 9
    onnx.save(model, str(tmp_path / "sm.onnx"))
    with pytest.raises(InvalidArgument, match="'y'.*Softmax"):
        yq.quantize_static(
            str(tmp_path / "sm.onnx"),
            tmp_path / "y.onnx",
            ListReader(_dense_batches(1)),
            activation_type="QFLOAT8E4M3FN",
            weight_type="QFLOAT8E4M3FN",
            calibrate_method="Distribution",
            op_types_to_quantize=["MatMul", "Softmax"],
            show_progress=False,
        )
