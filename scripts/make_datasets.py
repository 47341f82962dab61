"""Write the small example models onyx ships in onyx.datasets (the names onnxruntime.datasets ships).

    python scripts/make_datasets.py        # rewrites src/onyx/datasets/*.onnx

mul_1.onnx: Y = X * W (W a 3x2 initializer); sigmoid.onnx: y = Sigmoid(x) on 3x4x5; logreg_iris.onnx:
scikit-learn's LogisticRegression trained on the first two features of iris, converted by skl2onnx
(outputs ``label`` and ``probabilities``, a list of {class: probability} maps, as onnxruntime's example).
Needs the test extras (onnx, scikit-learn, skl2onnx); onyx itself only reads the files.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "onyx", "datasets")


def _save(model: onnx.ModelProto, name: str) -> None:
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))
    print("wrote", name)


def mul_1() -> onnx.ModelProto:
    w = helper.make_tensor("W", TensorProto.FLOAT, [3, 2], [1, 2, 3, 4, 5, 6])
    graph = helper.make_graph(
        [helper.make_node("Mul", ["X", "W"], ["Y"], name="mul_1")],
        "mul test",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 2])],
        [w],
    )
    return helper.make_model(graph, producer_name="onyx", opset_imports=[helper.make_opsetid("", 7)])


def sigmoid() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Sigmoid", ["x"], ["y"])],
        "test_sigmoid",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4, 5])],
    )
    return helper.make_model(graph, producer_name="onyx", opset_imports=[helper.make_opsetid("", 9)])


def logreg_iris() -> onnx.ModelProto:
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    iris = load_iris()
    x, y = iris.data[:, :2].astype(np.float32), iris.target
    clf = LogisticRegression(max_iter=500).fit(x, y)
    model = convert_sklearn(
        clf,
        "logreg_iris",
        [("float_input", FloatTensorType([None, 2]))],
        target_opset={"": 13, "ai.onnx.ml": 1},
    )
    # onnxruntime's example names its outputs label and probabilities; skl2onnx uses those inside
    renames = {"label": "label_inner", "probabilities": "probabilities_inner"}
    renames.update({"output_label": "label", "output_probability": "probabilities"})
    for node in model.graph.node:
        node.input[:] = [renames.get(i, i) for i in node.input]
        node.output[:] = [renames.get(o, o) for o in node.output]
    for out in model.graph.output:
        out.name = renames.get(out.name, out.name)
    model.producer_name = "onyx (skl2onnx)"
    return model


if __name__ == "__main__":
    _save(mul_1(), "mul_1.onnx")
    _save(sigmoid(), "sigmoid.onnx")
    _save(logreg_iris(), "logreg_iris.onnx")
