"""Model.clone: an independent copy of the structure over the same weights."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.ir.builder import GraphBuilder
from onyx.ir.model import Model


def _model() -> Model:
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["N", 4])
    w = b.initializer("w", np.arange(16, dtype=np.float32).reshape(4, 4))
    y = b.Relu(b.MatMul(x, w))
    cond = b.input("c", np.bool_, [])
    then_b = b.subgraph("then")
    then_b.output(then_b.Identity(y), "t", np.float32, ["N", 4])
    else_b = b.subgraph("else")
    else_b.output(else_b.Neg(y), "e", np.float32, ["N", 4])
    out = b.If(cond, then_branch=then_b.graph, else_branch=else_b.graph)
    b.output(out, "z", np.float32, ["N", 4])
    m = b.model()
    m.metadata_props.append(("k", "v"))
    return m


def test_clone_saves_the_same_bytes(tmp_path):
    m = _model()
    onyx.save(m, tmp_path / "a.onnx")
    onyx.save(m.clone(), tmp_path / "b.onnx")
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()


def test_clone_is_independent_but_shares_weights():
    from onyx.model_io import serialize

    m = _model()
    before = serialize(m)
    c = m.clone()
    # every object of the structure is new ...
    assert c.graph is not m.graph and c.graph.nodes[0] is not m.graph.nodes[0]
    assert c.graph.inputs[0] is not m.graph.inputs[0]
    assert c.graph.inputs[0].type is not m.graph.inputs[0].type
    assert c.graph.inputs[0].type.shape is not m.graph.inputs[0].type.shape
    # ... wired to each other, subgraphs reading the copy's outer values
    mm, relu = c.graph.nodes[0], c.graph.nodes[1]
    assert relu.inputs[0] is mm.outputs[0] and mm.outputs[0].producer is mm
    assert mm.outputs[0].uses == [(relu, 0)]
    then_g = c.graph.nodes[2].attributes["then_branch"].value
    assert then_g.parent is c.graph.nodes[2]
    assert then_g.nodes[0].inputs[0] is relu.outputs[0]
    assert any(n is then_g.nodes[0] for n, _ in relu.outputs[0].uses)
    # the weights are the same memory, read-only in the copy
    wm, wc = m.graph.initializers["w"].const, c.graph.initializers["w"].const
    assert wm is not wc and np.shares_memory(wm.numpy(), wc.numpy())
    assert not wc.numpy().flags.writeable
    # editing the copy leaves the original as it was
    c.graph.inputs[0].type.shape.dims[0] = 7
    c.graph.nodes[1].op_type = "Sigmoid"
    c.graph.nodes[1].attributes["x"] = None  # type: ignore[assignment]
    del c.graph.nodes[1].attributes["x"]
    c.graph.initializers["w"].const.name = "renamed"
    c.metadata_props.clear()
    then_g.nodes.clear()
    assert serialize(m) == before


@pytest.mark.parametrize("level", [0, 1, 99])
def test_session_leaves_the_callers_model_byte_identical(level):
    from onyx.model_io import serialize

    m = _model()
    before = serialize(m)
    so = onyx.SessionOptions()
    so.graph_optimization_level = level
    so.add_free_dimension_override_by_name("N", 2)
    s = onyx.InferenceSession(m, so)
    x = np.ones((2, 4), np.float32)
    got = s.run(None, {"x": x, "c": np.array(True)})[0]
    np.testing.assert_allclose(got, np.maximum(x @ np.arange(16, dtype=np.float32).reshape(4, 4), 0))
    assert serialize(m) == before
    assert s.model is not m
