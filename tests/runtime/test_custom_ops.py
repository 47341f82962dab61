"""Python kernels registered with onyx.custom_op and used by models."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onyx
from tests.runtime._util import make_model, onyx_session, tensor

DOMAIN = "my.domain"


@onyx.custom_op("MyRelu", domain=DOMAIN)
def my_relu(x):
    return np.maximum(x, np.zeros((), x.dtype))


@onyx.custom_op("MyScale", domain=DOMAIN)
def my_scale(x, bias=None, *, alpha=1.0, mode="mul", axes=None):
    y = x * np.asarray(alpha, x.dtype) if mode == "mul" else x + np.asarray(alpha, x.dtype)
    if bias is not None:
        y = y + bias
    if axes is not None:
        y = y.sum(axis=tuple(axes), keepdims=True)
    return y


@onyx.custom_op("MySplitHalves", domain=DOMAIN)
def my_split_halves(x, *, _num_outputs):
    return tuple(np.array_split(x, _num_outputs, axis=-1))


@onyx.custom_op("MyVersioned", domain=DOMAIN, since=1, until=2)
def my_versioned_1(x):
    return x + np.float32(1)


@onyx.custom_op("MyVersioned", domain=DOMAIN, since=2)
def my_versioned_2(x):
    return x + np.float32(2)


@onyx.custom_op("MyBroken", domain=DOMAIN)
def my_broken(x):
    raise ValueError("this kernel always fails")


def _model(node, inputs, outputs, version=1, **kw):
    return make_model([node], inputs, outputs, extra_opsets={DOMAIN: version}, **kw)


def test_custom_relu():
    model = _model(
        helper.make_node("MyRelu", ["x"], ["y"], domain=DOMAIN),
        [tensor("x", TensorProto.FLOAT, [None])],
        [tensor("y", TensorProto.FLOAT, [None])],
    )
    x = np.array([-1.0, 0.0, 2.5], np.float32)
    y = onyx_session(model).run(None, {"x": x})[0]
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, [0.0, 0.0, 2.5])


def test_custom_relu_between_standard_ops():
    nodes = [
        helper.make_node("Sub", ["x", "one"], ["a"]),
        helper.make_node("MyRelu", ["a"], ["b"], domain=DOMAIN),
        helper.make_node("Mul", ["b", "x"], ["y"]),
    ]
    model = make_model(
        nodes,
        [tensor("x", TensorProto.FLOAT, [None])],
        [tensor("y", TensorProto.FLOAT, [None])],
        initializers=[helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])],
        extra_opsets={DOMAIN: 1},
    )
    x = np.array([-1.0, 0.5, 3.0], np.float32)
    np.testing.assert_allclose(onyx_session(model).run(None, {"x": x})[0], np.maximum(x - 1, 0) * x)


def test_custom_op_with_attributes_and_optional_input():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    bias = np.array([1.0, 2.0, 3.0], np.float32)
    cases = [
        ({}, None, x),
        ({"alpha": 2.0}, None, x * 2),
        ({"alpha": 0.5, "mode": "add"}, bias, x + 0.5 + bias),
        ({"alpha": 3.0, "axes": [1]}, None, (x * 3).sum(axis=1, keepdims=True)),
    ]
    for attrs, b, want in cases:
        inputs = ["x"] + (["b"] if b is not None else [])
        model = _model(
            helper.make_node("MyScale", inputs, ["y"], domain=DOMAIN, **attrs),
            [tensor("x", TensorProto.FLOAT, [2, 3]), tensor("b", TensorProto.FLOAT, [3])][: len(inputs)],
            [tensor("y", TensorProto.FLOAT, None)],
        )
        feeds = {"x": x} if b is None else {"x": x, "b": b}
        np.testing.assert_allclose(onyx_session(model).run(None, feeds)[0], want)


def test_custom_op_with_an_undeclared_attribute_is_refused():
    model = _model(
        helper.make_node("MyRelu", ["x"], ["y"], domain=DOMAIN, slope=0.1),
        [tensor("x", TensorProto.FLOAT, [None])],
        [tensor("y", TensorProto.FLOAT, [None])],
    )
    with pytest.raises(onyx.OnyxError, match="slope"):
        onyx_session(model)


def test_custom_op_with_several_outputs():
    model = _model(
        helper.make_node("MySplitHalves", ["x"], ["a", "b"], domain=DOMAIN),
        [tensor("x", TensorProto.FLOAT, [2, 4])],
        [tensor("a", TensorProto.FLOAT, None), tensor("b", TensorProto.FLOAT, None)],
    )
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    a, b = onyx_session(model).run(None, {"x": x})
    np.testing.assert_array_equal(a, x[:, :2])
    np.testing.assert_array_equal(b, x[:, 2:])


def test_custom_op_versions_follow_the_model_opset():
    x = np.zeros(2, np.float32)
    for version, add in ((1, 1.0), (2, 2.0), (5, 2.0)):
        model = _model(
            helper.make_node("MyVersioned", ["x"], ["y"], domain=DOMAIN),
            [tensor("x", TensorProto.FLOAT, [2])],
            [tensor("y", TensorProto.FLOAT, [2])],
            version=version,
        )
        np.testing.assert_array_equal(onyx_session(model).run(None, {"x": x})[0], x + add)


def test_custom_op_inside_a_subgraph():
    then = helper.make_graph(
        [helper.make_node("MyRelu", ["x"], ["t"], domain=DOMAIN)],
        "then",
        [],
        [tensor("t", TensorProto.FLOAT, None)],
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [tensor("e", TensorProto.FLOAT, None)]
    )
    model = make_model(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
        [tensor("c", TensorProto.BOOL, []), tensor("x", TensorProto.FLOAT, [None])],
        [tensor("y", TensorProto.FLOAT, None)],
        extra_opsets={DOMAIN: 1},
    )
    x = np.array([-1.0, 2.0], np.float32)
    s = onyx_session(model)
    np.testing.assert_array_equal(s.run(None, {"c": np.array(True), "x": x})[0], [0.0, 2.0])
    np.testing.assert_array_equal(s.run(None, {"c": np.array(False), "x": x})[0], [1.0, -2.0])


def test_failing_custom_kernel_raises_fail_naming_the_node():
    model = _model(
        helper.make_node("MyBroken", ["x"], ["y"], domain=DOMAIN, name="broken_node"),
        [tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, [2])],
    )
    with pytest.raises(onyx.Fail, match="broken_node.*always fails"):
        onyx_session(model).run(None, {"x": np.zeros(2, np.float32)})


def test_registering_a_custom_op_again_replaces_it():
    """Re-running the cell that defines a kernel replaces it (onnxruntime has no such API to mirror)."""
    from onnx import TensorProto, helper

    name = "ReplacedOp"

    @onyx.custom_op(name, domain=DOMAIN)
    def first(x):
        return x + 1

    @onyx.custom_op(name, domain=DOMAIN)
    def second(x):
        return x + 2

    graph = helper.make_graph(
        [helper.make_node(name, ["x"], ["y"], domain=DOMAIN)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]
    )
    out = onyx.InferenceSession(model.SerializeToString()).run(None, {"x": np.zeros(2, np.float32)})[0]
    np.testing.assert_array_equal(out, [2, 2])


def test_builtin_operators_cannot_be_registered_twice():
    from onyx.ops.registry import op

    with pytest.raises(onyx.OnyxError, match="Relu"):

        @op("Relu", since=14)
        def again(x):
            return x
