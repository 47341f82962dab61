"""DQ -> GlobalAveragePool -> Q -> com.microsoft QLinearGlobalAveragePool (qdq_pool_fusion), on a model
quantized by onnxruntime's own quantizer: run before and after the pass and by onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.optimizer.levels import optimize
from onyx.optimizer.qdq_pool_fusion import qdq_pool_fusion
from tests.optimizer._helpers import ops, run

quantization = pytest.importorskip("onnxruntime.quantization")
rng = np.random.default_rng(31)
SHAPE = (1, 4, 9, 9)


def _init(name, shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _pool_net(path):
    """Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm: a CNN's head."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    inits = [_init("w", (16, 4, 3, 3)), _init("b", (16,)), _init("wf", (5, 16)), _init("bf", (5,))]
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    path.write_bytes(model.SerializeToString())
    return path


class _Reader:
    def __init__(self):
        self._it = iter([{"x": rng.standard_normal(SHAPE).astype(np.float32)} for _ in range(4)])

    def get_next(self):
        return next(self._it, None)


def _quantized(tmp_path):
    src = _pool_net(tmp_path / "f.onnx")
    dst = tmp_path / "q.onnx"
    quantization.quantize_static(
        str(src), str(dst), _Reader(), quant_format=quantization.QuantFormat.QDQ, per_channel=True,
        activation_type=quantization.QuantType.QUInt8, weight_type=quantization.QuantType.QInt8,
    )  # fmt: skip
    return dst


def test_pool_fusion_matches_onnxruntime(tmp_path):
    q = _quantized(tmp_path)
    assert ops(onyx.load(str(q)))["GlobalAveragePool"] == 1
    fused = onyx.load(str(q))
    optimize(fused, 2)
    counts = ops(fused)
    assert counts["QLinearGlobalAveragePool"] == 1 and counts["GlobalAveragePool"] == 0
    assert counts["DequantizeLinear"] == 1  # the output's
    m = onyx.load(str(q))
    last = [n for n in m.graph.nodes if n.op_type == "DequantizeLinear"][-1]
    step = float(m.graph.initializers[last.inputs[1].name].const.numpy())
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    ref = ort.InferenceSession(str(q), so, providers=["CPUExecutionProvider"])
    for _ in range(3):
        feeds = {"x": rng.standard_normal(SHAPE).astype(np.float32)}
        after = run(fused, feeds)[0]
        # onnxruntime fuses the same pool: the integer mean is its own, so the same output
        np.testing.assert_array_equal(after, ref.run(None, feeds)[0])
        # the unfused model means in float32 and quantizes: at most one step of the pool apart
        assert np.max(np.abs(after - run(str(q), feeds)[0])) <= 2 * step + 1e-6


def test_no_pool_fusion_across_types(tmp_path):
    """A Q to int8 after a DQ from uint8: QLinearGlobalAveragePool keeps one type, so no fusion."""
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.INT8, None)
    inits = [
        numpy_helper.from_array(np.float32(0.05), "s"),
        numpy_helper.from_array(np.uint8(128), "zu"),
        numpy_helper.from_array(np.int8(0), "zs"),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "s", "zu"], ["d"]),
        helper.make_node("GlobalAveragePool", ["d"], ["p"]),
        helper.make_node("QuantizeLinear", ["p", "s", "zs"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    path = tmp_path / "t.onnx"
    path.write_bytes(model.SerializeToString())
    m = onyx.load(str(path))
    assert not qdq_pool_fusion(m)
    assert ops(m)["GlobalAveragePool"] == 1
