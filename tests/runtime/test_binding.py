"""Binding a node to its kernel happens in one place (onyx.ops.binding.bind): the plan, constant folding
and shape inference read the same errors and the same keyword arguments from it."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.errors import InvalidGraph
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ir.builder import GraphBuilder
from onyx.ir.model import Attr, AttrType
from onyx.ops import binding, registry
from onyx.optimizer._util import run_kernel


def _one_node_model(op_type: str, n_inputs: int = 1, domain: str = "", **attrs):
    b = GraphBuilder(opset=17)
    ins = [b.input(f"x{i}", np.float32, [2]) for i in range(n_inputs)]
    y = b.op(op_type, *ins, domain=domain, name="the_node", **attrs)
    b.output(y, "y", np.float32, [2])
    return b.model()


def _errors_everywhere(model, error):
    """bind raises ``error``; the session raises the very same message; folding declines (None)."""
    node = model.graph.nodes[0]
    with pytest.raises(error) as bound:
        binding.bind(node, 17)
    with pytest.raises(error) as session:
        onyx.InferenceSession(model)
    assert str(session.value) == str(bound.value)
    assert run_kernel(node, [np.ones(2, np.float32)] * len(node.inputs), 17) is None
    assert "the_node" in str(bound.value)
    return str(bound.value)


def test_unknown_operator():
    msg = _errors_everywhere(_one_node_model("NoSuchOperator"), OnyxNotImplemented)
    assert "NoSuchOperator" in msg


def test_attribute_the_kernel_does_not_define():
    msg = _errors_everywhere(_one_node_model("Relu", alpha=0.5), InvalidGraph)
    assert "'alpha' is not defined" in msg


def test_missing_required_attribute():
    msg = _errors_everywhere(_one_node_model("Cast"), InvalidGraph)
    assert "required attribute 'to' is missing" in msg


def test_too_many_inputs():
    msg = _errors_everywhere(_one_node_model("Relu", n_inputs=2), InvalidGraph)
    assert "2 inputs given" in msg


def test_bound_kernel_arguments():
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [4])
    parts = b.op("Split", x, None, outputs=2, axis=0)
    for i, p in enumerate(parts):
        b.output(p, f"y{i}", np.float32, [2])
    node = b.model().graph.nodes[0]
    bound = binding.bind(node, 17)
    assert bound.kernel is registry.lookup("Split", "", 17)
    assert bound.arity == 1  # the absent optional 'split' input is dropped
    assert bound.kwargs == {"axis": 0, "_num_outputs": 2}
    a, c = bound(np.arange(4, dtype=np.float32), None)
    np.testing.assert_array_equal(c, [2, 3])


def test_attribute_reference_outside_a_function():
    node = _one_node_model("LeakyRelu").graph.nodes[0]
    node.attributes["alpha"] = Attr("alpha", AttrType.FLOAT, ref_attr_name="a")
    with pytest.raises(InvalidGraph, match="attribute reference 'a' outside a function"):
        binding.bind(node, 17)


def test_opset_for():
    assert binding.opset_for({"": 17, "ai.onnx.ml": 3}, "ai.onnx") == 17
    assert binding.opset_for({"": 17, "ai.onnx.ml": 3}, "ai.onnx.ml") == 3
    assert binding.opset_for({"": 17}, "some.custom") == 1
