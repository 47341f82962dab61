"""The quantized-model fusions of the extended level (QDQ -> QLinearConv / QLinearMatMul / QGemm /
MatMulIntegerToFloat / QLinearAdd / QLinearMul, Q/DQ pairs dropped around value-moving ops, quantize_dynamic's
groups -> DynamicQuantizeMatMul), on models quantized by onnxruntime's own quantizer: the models are run
before and after (and by onnxruntime), outputs compared."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.optimizer.levels import optimize
from tests.optimizer._helpers import ops, run

quantization = pytest.importorskip("onnxruntime.quantization")
rng = np.random.default_rng(23)


def _init(name, shape, scale=0.2):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _save(nodes, inputs, outputs, inits, path, opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    path.write_bytes(model.SerializeToString())
    return path


def _conv_net(path):
    """Conv-Relu -> MaxPool -> Conv -> Add (residual) -> Relu -> Mul -> Transpose -> Flatten -> Gemm."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 10, 10])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "p1"], ["a1"]),
        helper.make_node("Relu", ["a1"], ["r2"]),
        helper.make_node("Mul", ["r2", "p1"], ["m1"]),
        helper.make_node("Transpose", ["m1"], ["t1"], perm=[0, 1, 3, 2]),
        helper.make_node("Flatten", ["t1"], ["f1"]),
        helper.make_node("Gemm", ["f1", "wf", "bf"], ["y"], transB=1),
    ]
    inits = [
        _init("w1", (8, 4, 3, 3)),
        _init("b1", (8,)),
        _init("w2", (8, 8, 3, 3)),
        _init("b2", (8,)),
        _init("wf", (5, 200)),
        _init("bf", (5,)),
    ]
    return _save(nodes, [x], [y], inits, path)


class _Reader:
    def __init__(self, shape):
        self._it = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

    def get_next(self):
        return next(self._it, None)


def _static(src, dst, shape, per_channel=True):
    quantization.quantize_static(
        str(src),
        str(dst),
        _Reader(shape),
        quant_format=quantization.QuantFormat.QDQ,
        per_channel=per_channel,
        activation_type=quantization.QuantType.QUInt8,
        weight_type=quantization.QuantType.QInt8,
    )
    return dst


def _fused(path):
    m = onyx.load(str(path))
    optimize(m, 2)
    return m


def _ort(path, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def _output_scale(path):
    m = onyx.load(str(path))
    last = [n for n in m.graph.nodes if n.op_type == "DequantizeLinear"][-1]
    return float(m.graph.initializers[last.inputs[1].name].const.numpy())


@pytest.mark.parametrize("per_channel", [True, False])
def test_static_conv_net(tmp_path, per_channel):
    q = _static(_conv_net(tmp_path / "f.onnx"), tmp_path / "q.onnx", (1, 4, 10, 10), per_channel)
    feeds = {"x": rng.standard_normal((1, 4, 10, 10)).astype(np.float32)}
    fused = _fused(q)
    counts = ops(fused)
    assert counts["QLinearConv"] == 2 and counts["Conv"] == 0
    assert counts["QLinearAdd"] == 1 and counts["QLinearMul"] == 1 and counts["QGemm"] == 1
    assert counts["MaxPool"] == 1 and counts["Transpose"] == 1 and counts["Flatten"] == 1
    assert counts["DequantizeLinear"] == 1  # the output's
    before = run(str(q), feeds)[0]
    after = run(fused, feeds)[0]
    step = _output_scale(q)
    # integer convolutions are exact where float ones round; QLinearAdd / Mul requantize once: a few steps
    assert np.max(np.abs(after - before)) <= 4 * step + 1e-6
    # onnxruntime fuses the same groups: its result within one step (QLinearAdd's fixed-point rounding)
    assert np.max(np.abs(after - _ort(q, feeds))) <= 2 * step + 1e-6


def test_propagation_is_exact(tmp_path):
    """DQ -> MaxPool / Transpose / Flatten -> Q of equal parameters run on the 8-bit values: same output."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    s, z = numpy_helper.from_array(np.float32(0.05), "s"), numpy_helper.from_array(np.uint8(128), "z")
    s2 = numpy_helper.from_array(np.float32(0.07), "s2")
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q0"]),
        helper.make_node("DequantizeLinear", ["q0", "s", "z"], ["d0"]),
        helper.make_node("MaxPool", ["d0"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["p", "s", "z"], ["q1"]),
        helper.make_node("DequantizeLinear", ["q1", "s", "z"], ["d1"]),
        helper.make_node("Transpose", ["d1"], ["t"], perm=[0, 2, 3, 1]),
        helper.make_node("QuantizeLinear", ["t", "s2", "z"], ["q2"]),  # another scale: kept
        helper.make_node("DequantizeLinear", ["q2", "s2", "z"], ["y"]),
    ]
    path = _save(nodes, [x], [y], [s, z, s2], tmp_path / "p.onnx")
    fused = _fused(path)
    counts = ops(fused)
    assert counts["QuantizeLinear"] == 2 and counts["DequantizeLinear"] == 2
    feeds = {"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)}
    np.testing.assert_array_equal(run(fused, feeds)[0], run(str(path), feeds)[0])


def _matmul_net(path, with_add=True):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"] if with_add else ["y"])]
    inits = [_init("w", (16, 12))]
    if with_add:
        nodes.append(helper.make_node("Add", ["m", "b"], ["y"]))
        inits.append(_init("b", (12,)))
    return _save(nodes, [x], [y], inits, path)


def test_static_matmul_to_qlinear_matmul_equals_onnxruntime(tmp_path):
    q = _static(_matmul_net(tmp_path / "f.onnx", with_add=False), tmp_path / "q.onnx", (2, 3, 16), False)
    fused = _fused(q)
    assert ops(fused)["QLinearMatMul"] == 1 and ops(fused)["MatMul"] == 0
    feeds = {"x": rng.standard_normal((2, 3, 16)).astype(np.float32)}
    np.testing.assert_array_equal(run(fused, feeds)[0], _ort(q, feeds))
    assert np.max(np.abs(run(fused, feeds)[0] - run(str(q), feeds)[0])) <= _output_scale(q) + 1e-6


def test_dq_matmul_with_float_output_to_matmul_integer_to_float(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [4, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(rng.integers(-128, 128, (16, 8)).astype(np.int8), "w")
    inits = [
        w,
        numpy_helper.from_array(np.float32(0.02), "xs"),
        numpy_helper.from_array(np.uint8(7), "xz"),
        numpy_helper.from_array((rng.random(8) * 0.01).astype(np.float32), "ws"),
        numpy_helper.from_array(np.zeros(8, np.int8), "wz"),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["dx"]),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["dw"], axis=1),
        helper.make_node("MatMul", ["dx", "dw"], ["y"]),
    ]
    path = _save(nodes, [x], [y], inits, tmp_path / "m.onnx")
    fused = _fused(path)
    assert ops(fused)["MatMulIntegerToFloat"] == 1 and ops(fused)["MatMul"] == 0
    feeds = {"x": rng.integers(0, 256, (4, 16)).astype(np.uint8)}
    want = run(str(path), feeds)[0]
    np.testing.assert_allclose(run(fused, feeds)[0], want, rtol=0, atol=16 * 1e-7 * np.abs(want).max())


def test_dynamic_matmul_fusion_is_exact(tmp_path):
    src = _matmul_net(tmp_path / "f.onnx")
    q = tmp_path / "q.onnx"
    quantization.quantize_dynamic(str(src), str(q), weight_type=quantization.QuantType.QInt8)
    fused = _fused(q)
    counts = ops(fused)
    assert counts["DynamicQuantizeMatMul"] == 1 and counts["MatMulInteger"] == 0 and counts["Add"] == 0
    feeds = {"x": rng.standard_normal((2, 3, 16)).astype(np.float32)}
    np.testing.assert_array_equal(run(fused, feeds)[0], run(str(q), feeds)[0])
    want = _ort(q, feeds)
    np.testing.assert_allclose(run(fused, feeds)[0], want, rtol=0, atol=8 * 1.2e-7 * np.abs(want).max())


def test_no_fusion_when_weights_are_fed(tmp_path):
    """A DequantizeLinear whose quantized weight is a graph input is left alone (its values unknown)."""
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [4, 16])
    wq = helper.make_tensor_value_info("wq", TensorProto.INT8, [16, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [
        numpy_helper.from_array(np.float32(0.02), "s"),
        numpy_helper.from_array(np.uint8(7), "z"),
        numpy_helper.from_array(np.int8(0), "wz"),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "s", "z"], ["dx"]),
        helper.make_node("DequantizeLinear", ["wq", "s", "wz"], ["dw"]),
        helper.make_node("MatMul", ["dx", "dw"], ["y"]),
    ]
    path = _save(nodes, [x, wq], [y], inits, tmp_path / "m.onnx")
    assert ops(_fused(path))["MatMul"] == 1


def test_no_binary_fusion_across_types(tmp_path):
    """QLinearAdd takes one 8-bit type for A, B and C: an int8 operand beside uint8 ones stays unfused."""
    a = helper.make_tensor_value_info("a", TensorProto.UINT8, [4])
    b = helper.make_tensor_value_info("b", TensorProto.INT8, [4])
    y = helper.make_tensor_value_info("y", TensorProto.UINT8, None)
    inits = [
        numpy_helper.from_array(np.float32(0.1), "s"),
        numpy_helper.from_array(np.uint8(3), "zu"),
        numpy_helper.from_array(np.int8(-3), "zs"),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["a", "s", "zu"], ["da"]),
        helper.make_node("DequantizeLinear", ["b", "s", "zs"], ["db"]),
        helper.make_node("Add", ["da", "db"], ["sum"]),
        helper.make_node("QuantizeLinear", ["sum", "s", "zu"], ["y"]),
    ]
    path = _save(nodes, [a, b], [y], inits, tmp_path / "a.onnx")
    fused = _fused(path)
    assert ops(fused)["Add"] == 1 and ops(fused)["QLinearAdd"] == 0
    feeds = {"a": np.array([0, 3, 200, 255], np.uint8), "b": np.array([-128, -3, 5, 127], np.int8)}
    np.testing.assert_array_equal(run(fused, feeds)[0], run(str(path), feeds)[0])
