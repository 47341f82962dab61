"""Errors raised as onnxruntime raises them, but as onyx exceptions with actionable messages."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onyx
from onyx.errors import NotImplemented as OnyxNotImplemented
from tests.runtime._util import make_model, onyx_session, ort_session, tensor

X = np.ones((2, 3), np.float32)
Y = np.ones((1, 3), np.float32)


@pytest.fixture(scope="module")
def add_model():
    return make_model(
        [helper.make_node("Add", ["x", "y"], ["z"], name="add0")],
        [tensor("x", TensorProto.FLOAT, ["N", 3]), tensor("y", TensorProto.FLOAT, [1, 3])],
        [tensor("z", TensorProto.FLOAT, ["N", 3])],
    )


def _both_raise(model, feeds, onyx_error, output_names=None):
    """onnxruntime refuses the run too, and onyx raises ``onyx_error``; returns onyx's message."""
    with pytest.raises(Exception):  # noqa: B017 - onnxruntime's exception classes vary
        ort_session(model).run(output_names, feeds)
    with pytest.raises(onyx_error) as info:
        onyx_session(model).run(output_names, feeds)
    assert isinstance(info.value, onyx.OnyxError)
    return str(info.value)


def test_missing_input(add_model):
    msg = _both_raise(add_model, {"x": X}, onyx.InvalidArgument)
    assert "'y'" in msg and "missing" in msg


def test_unknown_input_name(add_model):
    msg = _both_raise(add_model, {"x": X, "y": Y, "q": Y}, onyx.InvalidArgument)
    assert "'q'" in msg


def test_wrong_element_type(add_model):
    msg = _both_raise(add_model, {"x": X.astype(np.float64), "y": Y}, onyx.InvalidArgument)
    assert "'x'" in msg and "tensor(float)" in msg and "tensor(double)" in msg


def test_wrong_rank(add_model):
    msg = _both_raise(add_model, {"x": X[0], "y": Y}, onyx.InvalidArgument)
    assert "'x'" in msg and "rank 2" in msg and "rank 1" in msg
    assert "[N, 3]" in msg and "[3]" in msg


def test_wrong_fixed_dimension(add_model):
    msg = _both_raise(add_model, {"x": X, "y": np.ones((2, 3), np.float32)}, onyx.InvalidArgument)
    assert "'y'" in msg and "[1, 3]" in msg and "[2, 3]" in msg


def test_symbolic_dimension_accepts_any_size(add_model):
    s = onyx_session(add_model)
    for n in (0, 1, 5):
        assert s.run(None, {"x": np.ones((n, 3), np.float32), "y": Y})[0].shape == (n, 3)


def test_unknown_output_name(add_model):
    msg = _both_raise(add_model, {"x": X, "y": Y}, onyx.InvalidArgument, output_names=["nope"])
    assert "'nope'" in msg and "'z'" in msg


def test_error_classes_are_onyx_errors_and_builtin_kinds():
    assert issubclass(onyx.InvalidArgument, ValueError)
    assert issubclass(onyx.Fail, RuntimeError)
    assert issubclass(OnyxNotImplemented, NotImplementedError)
    assert issubclass(onyx.NoSuchFile, FileNotFoundError)
    for cls in (onyx.InvalidArgument, onyx.Fail, OnyxNotImplemented, onyx.NoSuchFile, onyx.InvalidProtobuf):
        assert issubclass(cls, onyx.OnyxError)
    assert onyx.errors.NotImplemented is OnyxNotImplemented


def test_kernel_failure_reshape_names_node_op_and_shapes():
    model = make_model(
        [helper.make_node("Reshape", ["x", "s"], ["z"], name="resh")],
        [tensor("x", TensorProto.FLOAT, ["N", 3]), tensor("s", TensorProto.INT64, [2])],
        [tensor("z", TensorProto.FLOAT, None)],
    )
    msg = _both_raise(model, {"x": X, "s": np.array([4, 5], np.int64)}, onyx.Fail)
    assert "resh" in msg and "Reshape" in msg
    assert "[2, 3]" in msg  # the input's shape


def test_kernel_failure_matmul_on_symbolic_inputs():
    model = make_model(
        [helper.make_node("MatMul", ["a", "b"], ["c"], name="mm")],
        [tensor("a", TensorProto.FLOAT, ["M", "K"]), tensor("b", TensorProto.FLOAT, ["K2", "N"])],
        [tensor("c", TensorProto.FLOAT, None)],
    )
    feeds = {"a": np.ones((2, 3), np.float32), "b": np.ones((4, 5), np.float32)}
    msg = _both_raise(model, feeds, onyx.Fail)
    assert '"mm"' in msg and "MatMul" in msg and "[2, 3]" in msg and "[4, 5]" in msg


def test_kernel_failure_inside_a_subgraph_names_the_inner_node():
    body = helper.make_graph(
        [helper.make_node("Reshape", ["x", "s"], ["r"], name="inner_reshape")],
        "then",
        [],
        [tensor("r", TensorProto.FLOAT, None)],
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["r2"])], "else", [], [tensor("r2", TensorProto.FLOAT, None)]
    )
    model = make_model(
        [helper.make_node("If", ["c"], ["out"], name="the_if", then_branch=body, else_branch=other)],
        [
            tensor("c", TensorProto.BOOL, []),
            tensor("x", TensorProto.FLOAT, None),
            tensor("s", TensorProto.INT64, [2]),
        ],
        [tensor("out", TensorProto.FLOAT, None)],
    )
    feeds = {"c": np.array(True), "x": X, "s": np.array([4, 5], np.int64)}
    msg = _both_raise(model, feeds, onyx.Fail)
    assert "inner_reshape" in msg and "Reshape" in msg


def test_unknown_op_in_custom_domain_fails_at_session_creation():
    model = make_model(
        [helper.make_node("Foo", ["x"], ["y"], domain="my.unknown.domain", name="foo")],
        [tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, [2])],
        extra_opsets={"my.unknown.domain": 3},
    )
    with pytest.raises(Exception):  # noqa: B017
        ort_session(model)
    with pytest.raises(OnyxNotImplemented) as info:
        onyx_session(model)
    msg = str(info.value)
    assert "Foo" in msg and "my.unknown.domain" in msg and "3" in msg


def test_real_op_before_its_first_version_fails_at_session_creation():
    model = make_model(
        [helper.make_node("Gelu", ["x"], ["y"], name="g")],  # Gelu arrived in opset 20
        [tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, [2])],
        opset=18,
    )
    with pytest.raises(Exception):  # noqa: B017
        ort_session(model)
    with pytest.raises(OnyxNotImplemented) as info:
        onyx_session(model)
    msg = str(info.value)
    assert "Gelu" in msg and "ai.onnx" in msg and "18" in msg


def test_corrupt_model_bytes_and_file(tmp_path):
    good = make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, [2])],
    ).SerializeToString()
    for bad in (b"\xff\xff\xff\xff\xff", good[: len(good) // 2], b"this is not an onnx model at all"):
        with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.InvalidProtobuf):
            onnxruntime.InferenceSession(bad)
        with pytest.raises(onyx.InvalidProtobuf):
            onyx.InferenceSession(bad)
        path = tmp_path / "bad.onnx"
        path.write_bytes(bad)
        with pytest.raises(onyx.InvalidProtobuf):
            onyx.InferenceSession(str(path))


def test_empty_model_bytes():
    with pytest.raises(onyx.OnyxError):
        onyx.InferenceSession(b"")


def test_missing_path(tmp_path):
    missing = tmp_path / "nope" / "model.onnx"
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.NoSuchFile):
        onnxruntime.InferenceSession(str(missing))
    with pytest.raises(onyx.NoSuchFile) as info:
        onyx.InferenceSession(str(missing))
    assert "model.onnx" in str(info.value)


def test_bad_argument_types():
    with pytest.raises(onyx.InvalidArgument):
        onyx.InferenceSession(12345)
    s = onyx_session(
        make_model(
            [helper.make_node("Identity", ["x"], ["y"])],
            [tensor("x", TensorProto.FLOAT, [2])],
            [tensor("y", TensorProto.FLOAT, [2])],
        )
    )
    with pytest.raises(onyx.InvalidArgument):
        s.run(None, [np.ones(2, np.float32)])
    with pytest.raises(onyx.InvalidArgument):
        s.run("y", {"x": np.ones(2, np.float32)})


def test_op_without_kernel_inside_a_subgraph_or_function_fails_at_session_creation():
    then = helper.make_graph(
        [helper.make_node("Nope", ["x"], ["t"], domain="my.unknown.domain", name="inner")],
        "then",
        [],
        [tensor("t", TensorProto.FLOAT, None)],
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [tensor("e", TensorProto.FLOAT, None)]
    )
    model = make_model(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
        [tensor("c", TensorProto.BOOL, []), tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, None)],
        extra_opsets={"my.unknown.domain": 1},
    )
    with pytest.raises(OnyxNotImplemented, match="Nope"):
        onyx_session(model)
    fn = helper.make_function(
        "local.fn",
        "Wrap",
        ["x"],
        ["y"],
        [helper.make_node("Nope", ["x"], ["y"], domain="my.unknown.domain")],
        [helper.make_opsetid("my.unknown.domain", 2)],
    )
    model = make_model(
        [helper.make_node("Wrap", ["x"], ["y"], domain="local.fn")],
        [tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, None)],
        extra_opsets={"local.fn": 1, "my.unknown.domain": 2},
        functions=[fn],
    )
    with pytest.raises(OnyxNotImplemented, match="Nope.*my.unknown.domain|my.unknown.domain.*Nope"):
        onyx_session(model)
