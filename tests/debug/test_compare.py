"""onyx.debug.compare: two models, or one model on onyx and a peer, value by value."""

from __future__ import annotations

import json

import numpy as np
import pytest

import onyx
from onyx.debug import CompareResult, compare
from onyx.errors import InvalidArgument
from onyx.ir.dtypes import DataType
from onyx.ir.tensor import Tensor
from onyx.ir.types import TensorType

from ._models import bert_layer, conv_bn_relu

X = np.random.default_rng(1).standard_normal((2, 4, 16)).astype(np.float32)


def with_changed_weight(model, name: str, index: tuple, delta: float = 1.0):
    """``model`` with one element of the initializer ``name`` moved by ``delta``."""
    v = model.graph.initializers[name]
    arr = v.const.numpy().copy()
    arr[index] += delta
    v.const = Tensor.from_numpy(arr, name)
    return model


@pytest.mark.parametrize(
    ("weight", "node", "op_type"), [("w2", "mm2_node", "MatMul"), ("gamma", "ln_scaled_node", "Mul")]
)
def test_one_changed_weight_blames_the_node_that_reads_it(weight, node, op_type):
    first_element = (0,) * bert_layer().graph.initializers[weight].const.numpy().ndim
    a, b = bert_layer(), with_changed_weight(bert_layer(), weight, first_element)
    result = compare(a, b, {"x": X})
    assert isinstance(result, CompareResult) and not result.agreed
    d = result.first_divergence
    assert (d.node, d.op_type) == (node, op_type)
    assert {i["name"]: i["agreed"] for i in d.inputs}[weight] is False
    assert all(i["agreed"] for i in d.inputs if i["name"] != weight)  # everything else it read agreed
    assert d.figures.mismatches > 0 and d.figures.max_abs > 0.01
    # the table: worst first, every differing value before every agreeing one, the weight among them
    flags = [v.agreed for v in result.values]
    assert flags == sorted(flags)
    assert any(v.name == weight and not v.agreed for v in result.values)
    # values before the changed node are bit-identical (the same graph, the same inputs)
    by_name = {v.name: v for v in result.values}
    assert by_name["mm1"].agreed and by_name["mm1"].figures.max_abs == 0.0
    doc = json.loads(result.to_json())
    assert doc["first_divergence"]["node"] == node and doc["first_divergence"]["op_type"] == op_type
    assert doc["agreed"] is False and doc["values"][0]["agreed"] is False


@pytest.mark.parametrize("against", ["onnxruntime", "reference", "unoptimized"])
def test_one_model_agrees_with_its_peers(against):
    result = compare(bert_layer(), feeds={"x": X}, against=against)
    assert result.agreed and result.first_divergence is None
    if against != "unoptimized":
        assert not result.unmatched and len(result.values) == 19  # every node's output compared
    else:
        assert {"mm1", "mm2", "y"} <= {v.name for v in result.values}  # what survives fusion
    # float32 with sums in another order: far inside rtol 1e-3
    assert all(v.figures.max_rel < 1e-4 for v in result.values)
    assert json.loads(result.to_json())["first_divergence"] is None


def test_conv_model_against_onnxruntime_with_random_inputs():
    result = compare(conv_bn_relu(), dims={"N": 2})
    assert result.agreed, result.summary()
    assert next(v for v in result.values if v.name == "pool").shape == [2, 5, 1, 1]


def _quantized(tmp_path, quant_format: str = "QDQ"):
    """The float model's file and onnxruntime's static 8-bit quantization of it (QDQ or QOperator)."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    float_path, qdq_path = str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx")
    onyx.save(bert_layer(), float_path)
    rng = np.random.default_rng(0)

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.data = iter([{"x": rng.standard_normal((2, 4, 16)).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.data, None)

    fmt = getattr(quantization.QuantFormat, quant_format)
    quantization.quantize_static(float_path, qdq_path, Reader(), quant_format=fmt)
    return float_path, qdq_path


def test_quantized_model_matches_its_float_model_through_the_renames(tmp_path):
    float_path, qdq_path = _quantized(tmp_path)
    quantized = onyx.load(qdq_path)
    assert "w1" not in quantized.graph.values()  # the quantizer renamed the weight...
    result = compare(float_path, qdq_path, {"x": X})
    by_name = {v.name: v for v in result.values}
    assert by_name["w1"].other == "w1_DequantizeLinear_Output"  # ...and it is found under its new name
    assert not result.unmatched  # every float value has a float stand-in
    assert by_name["mm1"].other == "mm1" and by_name["y"].other == "y"
    # 8-bit quantization: close in direction, not within float tolerance
    assert by_name["y"].figures.cosine > 0.99 and by_name["w1"].figures.cosine > 0.999
    assert not result.agreed
    assert result.first_divergence.node == "mm1_node"  # the first node that reads quantized tensors
    loose = compare(float_path, qdq_path, {"x": X}, rtol=0.5, atol=0.5)
    assert loose.agreed and loose.first_divergence is None


def test_qoperator_model_is_dequantized_to_match(tmp_path):
    float_path, q_path = _quantized(tmp_path, "QOperator")
    ops = {n.op_type for n in onyx.load(q_path).graph.nodes}
    assert "QLinearMatMul" in ops and "mm1" not in onyx.load(q_path).graph.values()
    result = compare(float_path, q_path, {"x": X})
    by_name = {v.name: v for v in result.values}
    # integers with their scale and zero point, dequantized: within about a quantization step
    assert by_name["mm1"].other == "mm1_quantized (dequantized)"
    assert by_name["w1"].other == "w1_quantized (dequantized)" and by_name["w1"].figures.cosine > 0.999
    assert by_name["fc1"].other == "fc1"  # a float value the quantized model still computes
    assert by_name["y"].figures.cosine > 0.99 and not result.unmatched
    assert result.first_divergence.node == "mm1_node"


def test_float16_conversion_takes_cast_inputs_and_is_compared_as_floats():
    half = bert_layer()
    g = half.graph
    for name, v in g.initializers.items():
        v.const = Tensor.from_numpy(v.const.numpy().astype(np.float16), name)
        v.type = TensorType(DataType.FLOAT16, v.type.shape)
    g.inputs[0].type = TensorType(DataType.FLOAT16, g.inputs[0].type.shape)
    g.outputs[0].type = None
    # float16 carries 11 significant bits: relative errors of a few 1e-3 through a dozen ops
    result = compare(bert_layer(), half, {"x": X}, rtol=2e-2, atol=2e-2)
    assert result.agreed and not result.unmatched, result.summary()
    assert "float16" in next(v for v in result.values if v.name == "y").figures.note
    assert not compare(bert_layer(), half, {"x": X}).agreed  # float32 tolerance: the conversion shows


def test_bad_input():
    with pytest.raises(InvalidArgument, match=r"different inputs.*\['x'\].*\['image'\]"):
        compare(bert_layer(), conv_bn_relu())
    with pytest.raises(InvalidArgument, match=r"unknown input name\(s\) \['y'\]"):
        compare(bert_layer(), feeds={"x": X, "y": X})
    with pytest.raises(InvalidArgument, match="against must be one of"):
        compare(bert_layer(), against="tensorflow")
    with pytest.raises(InvalidArgument, match="two models run on one of"):
        compare(bert_layer(), bert_layer(), against="unoptimized")
    with pytest.raises(InvalidArgument, match="rtol must be a non-negative"):
        compare(bert_layer(), rtol=-1)
    with pytest.raises(InvalidArgument, match=r"unknown dimension name\(s\) \['bacth'\]"):
        compare(bert_layer(), dims={"bacth": 2})
    with pytest.raises(onyx.NoSuchFile):
        compare("/nonexistent.onnx")
    with pytest.raises(onyx.InvalidProtobuf):
        compare(b"\x12\x05abc")
    with pytest.raises(InvalidArgument, match="expected an onyx Model"):
        compare(3.5)
