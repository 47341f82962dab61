"""Models and calibration data shared by the quantization tests.

The CNN's weights are multiples of 1/4 and its inputs whole numbers, so every float32 sum in it is
exact whatever the order: onyx and onnxruntime compute bit-identical activations, and the quantizers'
scales and zero points can be compared for exact equality.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto
from onnx import helper as h
from onnx import numpy_helper as nh


def cnn_model(path, dyadic: bool = True, opset: int = 17) -> str:
    rng = np.random.default_rng(0)

    def init(name, a):
        a = np.round(a * 4) / 4 if dyadic else a
        return nh.from_array(a.astype(np.float32), name)

    inits = [
        init("w1", rng.normal(size=(4, 1, 3, 3)) * 0.5),
        init("b1", rng.normal(size=4) * 0.1),
        init("w2", rng.normal(size=(6, 4, 3, 3)) * 0.3),
        init("b2", rng.normal(size=6) * 0.1),
        init("wg", rng.normal(size=(10, 24)) * 0.2),
        init("bg", rng.normal(size=10) * 0.1),
        init("wm", rng.normal(size=(10, 5)) * 0.3),
        init("am", rng.normal(size=5) * 0.1),
        nh.from_array(np.array([0, -1], np.int64), "shp"),
    ]
    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        h.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2"),
        h.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        h.make_node("Reshape", ["r2", "shp"], ["f"], name="reshape"),
        h.make_node("Gemm", ["f", "wg", "bg"], ["g"], name="gemm", transB=1),
        h.make_node("MatMul", ["g", "wm"], ["m"], name="matmul"),
        h.make_node("Add", ["m", "am"], ["y"], name="add"),
    ]
    graph = h.make_graph(
        nodes,
        "cnn",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
        inits,
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def batches(n: int = 4, batch: int = 2, whole: bool = True, seed: int = 0) -> list[dict]:
    out = []
    for i in range(n):
        x = np.random.default_rng(seed + i).normal(size=(batch, 1, 8, 8))
        out.append({"x": (x.round() if whole else x).astype(np.float32)})
    return out


class ListReader:
    """A CalibrationDataReader over a list of feed dicts (works with onyx's and onnxruntime's quantizer)."""

    def __init__(self, feeds: list[dict]):
        self.feeds = feeds
        self.it = iter(feeds)

    def get_next(self):
        return next(self.it, None)

    def __len__(self):
        return len(self.feeds)

    def rewind(self):
        self.it = iter(self.feeds)


def initializers(path) -> dict[str, np.ndarray]:
    return {i.name: nh.to_array(i) for i in onnx.load(str(path)).graph.initializer}


def node_signature(path) -> list[tuple]:
    def key(n):
        attrs = tuple(sorted((a.name, str(h.get_attribute_value(a))) for a in n.attribute))
        return (n.op_type, n.name, n.domain, tuple(n.input), tuple(n.output), attrs)

    return sorted(map(key, onnx.load(str(path)).graph.node))


def mixed_model(path) -> str:
    """Normalizations, activations, pooling, Softmax, Concat, Transpose, a Constant node and a scalar Mul:
    the op types whose quantization rules differ."""
    rng = np.random.default_rng(1)

    def init(name, a):
        return nh.from_array(np.asarray(a, np.float32), name)

    inits = [
        init("w", rng.normal(size=(6, 3, 3, 3)) * 0.3),
        init("b", rng.normal(size=6) * 0.1),
        init("bn_s", 1 + 0.1 * rng.normal(size=6)),
        init("bn_b", 0.1 * rng.normal(size=6)),
        init("bn_m", 0.1 * rng.normal(size=6)),
        init("bn_v", 1 + 0.1 * rng.random(6)),
        init("ln_s", 1 + 0.1 * rng.normal(size=6)),
        init("ln_b", 0.1 * rng.normal(size=6)),
        init("fc", rng.normal(size=(6, 6)) * 0.3),
        init("lo", 0.0),
        init("hi", 6.0),
    ]
    nodes = [
        h.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["c", "bn_s", "bn_b", "bn_m", "bn_v"], ["n"], name="bn"),
        h.make_node("Clip", ["n", "lo", "hi"], ["r"], name="clip"),
        h.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
        h.make_node("Flatten", ["g"], ["f"], name="flat"),
        h.make_node("LayerNormalization", ["f", "ln_s", "ln_b"], ["l"], name="ln", axis=-1),
        h.make_node("MatMul", ["l", "fc"], ["m"], name="mm"),
        h.make_node("Sigmoid", ["m"], ["s"], name="sig"),
        h.make_node("Constant", [], ["two"], name="const", value=nh.from_array(np.array(2.0, np.float32))),
        h.make_node("Mul", ["s", "two"], ["s2"], name="mul"),
        h.make_node("Softmax", ["s2"], ["p"], name="softmax", axis=-1),
        h.make_node("Transpose", ["p"], ["t"], name="tr", perm=[1, 0]),
        h.make_node("Transpose", ["t"], ["tt"], name="tr2", perm=[1, 0]),
        h.make_node("Concat", ["tt", "l"], ["y"], name="cat", axis=1),
    ]
    graph = h.make_graph(
        nodes,
        "mixed",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12])],
        inits,
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)
