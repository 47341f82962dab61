"""The in-memory model: builder, value wiring, rewriting verbs, and a round trip through onnx."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import onyx
from onyx.ir.builder import GraphBuilder, make_attr
from onyx.ir.model import AttrType


def small_model():
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["N", 3])
    s = b.Add(x, b.const(np.ones(3, np.float32)))
    y = b.Relu(s)
    b.output(b.Transpose(y, perm=[1, 0]), "z", np.float32, [3, "N"])
    return b.model()


def test_builder_model_runs_in_onnxruntime_and_onyx():
    m = small_model()
    onyx.check(m)
    data = onyx.serialize(m)
    proto = onnx.ModelProto()
    proto.ParseFromString(data)
    onnx.checker.check_model(proto)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    want = ort.InferenceSession(data).run(None, {"x": x})[0]
    got = onyx.InferenceSession(m).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_values_know_producer_and_uses():
    m = small_model()
    add, relu, tr = m.graph.nodes
    s = add.outputs[0]
    assert s.producer is add and s.index == 0
    assert s.uses == [(relu, 0)]
    x = m.graph.inputs[0]
    assert x.uses == [(add, 0)]


def test_replace_all_uses_with_rewires_and_renames_follow():
    m = small_model()
    add, relu, tr = m.graph.nodes
    x = m.graph.inputs[0]
    add.outputs[0].replace_all_uses_with(x)  # skip the Add
    m.graph.remove_node(add)
    assert relu.inputs[0] is x and (relu, 0) in x.uses
    assert all(u[0] is not add for u in x.uses)
    x.name = "renamed"
    proto = onnx.ModelProto()
    proto.ParseFromString(onyx.serialize(m))
    assert proto.graph.node[0].input[0] == "renamed"
    assert proto.graph.input[0].name == "renamed"


def test_walk_visits_subgraphs():
    b = GraphBuilder(opset=17)
    c = b.input("c", np.bool_, [])
    x = b.input("x", np.float32, [2])
    then = b.subgraph("then")
    then.output(then.Neg(x), "t", np.float32, [2])
    other = b.subgraph("else")
    other.output(other.Abs(x), "e", np.float32, [2])
    y = b.If(c, then_branch=then.graph, else_branch=other.graph)
    b.output(y, "y", np.float32, [2])
    m = b.model()
    assert [n.op_type for n in m.graph.walk()] == ["If", "Neg", "Abs"]
    sess = onyx.InferenceSession(onyx.serialize(m))
    np.testing.assert_array_equal(
        sess.run(None, {"c": np.array(True), "x": np.array([1.0, -2.0], np.float32)})[0], [-1.0, 2.0]
    )


@pytest.mark.parametrize(
    "value,kind",
    [
        (1, AttrType.INT),
        (1.5, AttrType.FLOAT),
        ("s", AttrType.STRING),
        ([1, 2], AttrType.INTS),
        ([1.0, 2], AttrType.FLOATS),
        (["a"], AttrType.STRINGS),
        (np.zeros(2), AttrType.TENSOR),
    ],
)
def test_make_attr_infers_kind(value, kind):
    assert make_attr("a", value).type == kind


def test_make_attr_rejects_unknown_kinds():
    with pytest.raises(onyx.InvalidArgument):
        make_attr("a", object())


@pytest.mark.parametrize(
    "dims",
    [(97, 8, 2**31, 4, 2**31, 0), (0, 2**62, 4), (1,) * 65],
    ids=["zero-beside-dims-past-2e63", "zero-beside-2e64", "rank-65"],
)
@pytest.mark.parametrize("raw", [b"", None], ids=["raw", "typed"])
def test_tensor_shapes_numpy_cannot_build_are_invalid_graph(dims, raw):
    from onyx.errors import InvalidGraph
    from onyx.ir.dtypes import DataType
    from onyx.ir.tensor import Tensor

    t = Tensor("w", int(DataType.FLOAT), dims, raw=raw)
    with pytest.raises(InvalidGraph, match="past what an array can have"):
        t.numpy()
