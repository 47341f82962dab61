"""Gradient (ai.onnx.preview.training) against central finite differences."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import onyx


def grad_model(nodes, y, xs, shapes):
    inputs = [helper.make_tensor_value_info(n, TensorProto.DOUBLE, s) for n, s in zip(xs, shapes)]
    outs = [f"d_{x}" for x in xs]
    g = helper.make_node("Gradient", xs, outs, xs=xs, y=y, domain="ai.onnx.preview.training")
    graph = helper.make_graph(
        nodes + [g],
        "g",
        inputs,
        [helper.make_tensor_value_info(y, TensorProto.DOUBLE, None)]
        + [helper.make_tensor_value_info(o, TensorProto.DOUBLE, None) for o in outs],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.preview.training", 1)]
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


def numeric(f, xs, k, eps=1e-6):
    x = xs[k]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus = [a.copy() for a in xs]
        minus = [a.copy() for a in xs]
        plus[k][idx] += eps
        minus[k][idx] -= eps
        g[idx] = (f(plus).sum() - f(minus).sum()) / (2 * eps)
    return g


@pytest.mark.parametrize("case", ["matmul_relu_sum", "broadcast_div_tanh"])
def test_gradient_matches_finite_differences(case):
    rng = np.random.default_rng(0)
    if case == "matmul_relu_sum":
        nodes = [
            helper.make_node("MatMul", ["a", "b"], ["m"]),
            helper.make_node("Relu", ["m"], ["r"]),
            helper.make_node("ReduceSum", ["r"], ["y"], keepdims=0),
        ]
        shapes = [(3, 4), (4, 2)]

        def f(v):
            return np.maximum(v[0] @ v[1], 0).sum()
    else:
        nodes = [helper.make_node("Div", ["a", "b"], ["q"]), helper.make_node("Tanh", ["q"], ["y"])]
        shapes = [(3, 4), (4,)]

        def f(v):
            return np.tanh(v[0] / v[1])

    xs = [rng.standard_normal(s) + (2.0 if case != "matmul_relu_sum" else 0.0) for s in shapes]
    sess = onyx.InferenceSession(grad_model(nodes, "y", ["a", "b"], shapes))
    _, da, db = sess.run(None, {"a": xs[0], "b": xs[1]})
    np.testing.assert_allclose(da, numeric(f, xs, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(db, numeric(f, xs, 1), rtol=1e-5, atol=1e-6)


def test_gradient_through_an_op_without_derivative_names_it():
    nodes = [helper.make_node("Floor", ["a"], ["y"])]
    sess = onyx.InferenceSession(grad_model(nodes, "y", ["a"], [(2,)]))
    with pytest.raises(onyx.OnyxError, match="Floor"):
        sess.run(None, {"a": np.ones(2)})
