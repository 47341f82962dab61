"""onyx.check: no false positives on the official models, and each rule caught with a message that names
the node or field at fault. Bad models are built with onnx.helper (test-only) and loaded from bytes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from tests.proto._corpus import node_cases, shipped_models, short

FLOAT = TensorProto.FLOAT


def vi(name, shape=(2,), elem=FLOAT):
    return helper.make_tensor_value_info(name, elem, list(shape) if shape is not None else None)


def model(nodes, inputs=("x",), outputs=("y",), inits=(), opset=17, ir=8, functions=(), **graph_kw):
    graph = helper.make_graph(
        list(nodes),
        "g",
        [vi(i) if isinstance(i, str) else i for i in inputs],
        [vi(o) if isinstance(o, str) else o for o in outputs],
        list(inits),
        **graph_kw,
    )
    opsets = [helper.make_opsetid("", opset)] if isinstance(opset, int) else opset
    m = helper.make_model(graph, opset_imports=opsets, functions=list(functions))
    if ir is None:
        m.ClearField("ir_version")
    else:
        m.ir_version = ir
    return m


def errors_of(proto) -> list[str]:
    m = onyx.load(proto.SerializeToString())
    with pytest.raises(onyx.InvalidGraph) as info:
        onyx.check(m)
    return info.value.errors


def assert_caught(proto, *needles: str) -> str:
    """One error message contains every needle; return it."""
    errors = errors_of(proto)
    for e in errors:
        if all(n in e for n in needles):
            return e
    raise AssertionError(f"no error mentions {needles}; got:\n" + "\n".join(errors))


def test_a_good_model_passes():
    onyx.check(onyx.load(model([helper.make_node("Relu", ["x"], ["y"], name="r")]).SerializeToString()))


# ---------------------------------------------------------------------------------------------
# No false positives


def test_node_suite_models_pass():
    failures = []
    for name, data in node_cases():
        try:
            onyx.check(onyx.load(data))
        except onyx.InvalidGraph as e:
            failures.append(f"{name}: {e}")
    assert not failures, "\n".join(failures[:20])


@pytest.mark.parametrize("path", shipped_models(), ids=short)
def test_shipped_models_pass(path):
    onyx.check(onyx.load(path))


def test_sessions_check_loosely():
    # full=False (what sessions use) skips the rules about files handed to other tools
    m = onyx.load(model([helper.make_node("Relu", ["x"], ["y"])], opset=99).SerializeToString())
    onyx.check(m, full=False)
    with pytest.raises(onyx.InvalidGraph):
        onyx.check(m)


# ---------------------------------------------------------------------------------------------
# Each rule


def test_ssa_violation():
    nodes = [
        helper.make_node("Relu", ["x"], ["t"], name="first"),
        helper.make_node("Neg", ["x"], ["t"], name="second"),
        helper.make_node("Abs", ["t"], ["y"], name="last"),
    ]
    assert_caught(model(nodes), "'t'", "more than once", "second")


def test_node_output_shadowing_a_graph_input():
    assert_caught(
        model([helper.make_node("Relu", ["x"], ["x"], name="r"), helper.make_node("Abs", ["x"], ["y"])]),
        "'x'",
        "r",
    )


def test_nodes_out_of_topological_order():
    nodes = [
        helper.make_node("Abs", ["t"], ["y"], name="consumer"),
        helper.make_node("Relu", ["x"], ["t"], name="producer"),
    ]
    e = assert_caught(model(nodes), "consumer", "'t'", "topological")
    assert "producer" in e


def test_undefined_input():
    assert_caught(
        model([helper.make_node("Add", ["x", "nowhere"], ["y"], name="adder")]), "adder", "'nowhere'"
    )


def test_undefined_graph_output():
    assert_caught(model([helper.make_node("Relu", ["x"], ["t"])], outputs=["y"]), "'y'", "output")


def _if_reading(outer_name: str, defined_after: bool):
    then_g = helper.make_graph(
        [helper.make_node("Identity", [outer_name], ["a"], name="inner_read")], "then", [], [vi("a")]
    )
    else_g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["b"], name="inner_x")], "else", [], [vi("b")]
    )
    cond = numpy_helper.from_array(np.array(True), "cond")
    if_node = helper.make_node("If", ["cond"], ["y"], name="the_if", then_branch=then_g, else_branch=else_g)
    late = helper.make_node("Neg", ["x"], [outer_name], name="late")
    nodes = [if_node, late] if defined_after else [late, if_node]
    outputs = ["y", vi(outer_name)]
    return model(nodes, outputs=outputs, inits=[cond])


def test_subgraph_reading_an_outer_value_defined_after_its_node():
    assert_caught(_if_reading("t", defined_after=True), "inner_read", "'t'", "the_if")
    onyx.check(onyx.load(_if_reading("t", defined_after=False).SerializeToString()))


def test_attribute_with_no_value_of_its_kind():
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="leaky", alpha=0.1)
    node.attribute[0].type = onnx.AttributeProto.INT  # says INT, carries f
    assert_caught(model([node]), "leaky", "'alpha'", "INT")


def test_attribute_with_no_value_at_all():
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="leaky")
    node.attribute.add(name="alpha", type=onnx.AttributeProto.FLOAT)
    assert_caught(model([node]), "leaky", "'alpha'", "no value")


def test_attribute_with_undefined_type():
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="leaky")
    node.attribute.add(name="alpha")
    assert_caught(model([node]), "leaky", "'alpha'")


def test_attribute_reference_outside_a_function():
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="leaky")
    node.attribute.add(name="alpha", type=onnx.AttributeProto.FLOAT, ref_attr_name="a")
    assert_caught(model([node]), "leaky", "'alpha'", "outside a function")


@pytest.mark.parametrize("storage", ["raw", "typed"])
def test_initializer_data_size_vs_shape(storage):
    w = (
        numpy_helper.from_array(np.ones(3, np.float32), "W")
        if storage == "raw"
        else helper.make_tensor("W", FLOAT, [3], [1.0, 2.0, 3.0])
    )
    w.dims[:] = [2, 2]
    e = assert_caught(model([helper.make_node("Add", ["x", "W"], ["y"])], inits=[w]), "'W'")
    assert "[2, 2]" in e


def test_tensor_attribute_data_size_vs_shape():
    t = numpy_helper.from_array(np.ones(3, np.float32), "c")
    t.dims[:] = [4]
    node = helper.make_node("Constant", [], ["y"], name="const", value=t)
    assert_caught(model([node], inputs=[]), "const", "'value'")


def test_duplicate_initializer():
    a = numpy_helper.from_array(np.ones(2, np.float32), "W")
    b = numpy_helper.from_array(np.zeros(2, np.float32), "W")
    assert_caught(model([helper.make_node("Add", ["x", "W"], ["y"])], inits=[a, b]), "'W'", "twice")


def test_duplicate_graph_input():
    assert_caught(model([helper.make_node("Add", ["x", "x"], ["y"])], inputs=["x", "x"]), "'x'", "twice")


def test_duplicate_attribute():
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="leaky", alpha=0.1)
    node.attribute.append(helper.make_attribute("alpha", 0.2))
    assert_caught(model([node]), "leaky", "'alpha'", "twice")


def test_duplicate_opset_import():
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("", 18)]
    assert_caught(model([helper.make_node("Relu", ["x"], ["y"])], opset=opsets), "opset_import", "twice")


def test_opset_import_repeated_with_the_same_version_is_accepted():
    """skl2onnx lists the default domain twice with one version; onnx's checker and onnxruntime accept
    that, and so does onyx."""
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3), helper.make_opsetid("", 17)]
    m = model([helper.make_node("Relu", ["x"], ["y"])], opset=opsets)
    onnx.checker.check_model(m)
    onyx.check(onyx.load(m.SerializeToString()))
    x = np.array([-1.0, 2.0], dtype=np.float32)
    np.testing.assert_array_equal(onyx.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0], [0, 2])


def test_missing_ir_version():
    assert_caught(model([helper.make_node("Relu", ["x"], ["y"])], ir=None), "ir_version")


def test_ir_version_too_new():
    assert_caught(model([helper.make_node("Relu", ["x"], ["y"])], ir=99), "ir_version 99")


def test_opset_newer_than_known():
    assert_caught(model([helper.make_node("Relu", ["x"], ["y"])], opset=99), "opset 99", "newer")


def test_ml_opset_newer_than_known():
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 42)]
    assert_caught(model([helper.make_node("Relu", ["x"], ["y"])], opset=opsets), "ai.onnx.ml", "42")


def test_ir_version_too_old_for_opset():
    e = assert_caught(
        model([helper.make_node("Relu", ["x"], ["y"])], opset=21, ir=4), "opset 21", "IR version"
    )
    assert "4" in e
    # one release of slack: exporters paired new opsets with the previous IR version
    onyx.check(onyx.load(model([helper.make_node("Relu", ["x"], ["y"])], opset=21, ir=9).SerializeToString()))


def test_missing_opset_import():
    m = model([helper.make_node("Relu", ["x"], ["y"])])
    del m.opset_import[:]
    assert_caught(m, "opset_import")


def test_node_domain_not_imported():
    assert_caught(
        model([helper.make_node("Foo", ["x"], ["y"], name="foo", domain="com.acme")]), "foo", "com.acme"
    )


def test_missing_op_type():
    node = helper.make_node("Relu", ["x"], ["y"], name="nameless_op")
    node.op_type = ""
    assert_caught(model([node]), "nameless_op", "op_type")


@pytest.mark.parametrize("kind", ["empty-type", "no-type"])
def test_missing_input_type(kind):
    x = (
        helper.make_value_info("x", onnx.TypeProto())
        if kind == "empty-type"
        else onnx.ValueInfoProto(name="x")
    )
    assert_caught(model([helper.make_node("Relu", ["x"], ["y"])], inputs=[x]), "input 'x'", "no type")


@pytest.mark.parametrize("kind", ["empty-type", "no-type"])
def test_missing_output_type(kind):
    y = (
        helper.make_value_info("y", onnx.TypeProto())
        if kind == "empty-type"
        else onnx.ValueInfoProto(name="y")
    )
    assert_caught(model([helper.make_node("Relu", ["x"], ["y"])], outputs=[y]), "output 'y'", "no type")


def test_sequence_without_element_type():
    x = helper.make_value_info("x", helper.make_sequence_type_proto(onnx.TypeProto()))
    assert_caught(model([helper.make_node("Identity", ["x"], ["y"])], inputs=[x]), "input 'x'", "no type")


def test_input_without_element_type():
    x = helper.make_tensor_value_info("x", TensorProto.UNDEFINED, [2])
    assert_caught(model([helper.make_node("Relu", ["x"], ["y"])], inputs=[x]), "input 'x'", "element type")


def test_empty_graph_input_name():
    assert_caught(model([helper.make_node("Relu", ["x"], ["y"])], inputs=["x", ""]), "empty name")


# ---------------------------------------------------------------------------------------------
# Functions


def _function(nodes, inputs=("a",), outputs=("b",), attributes=(), name="MyFn"):
    return helper.make_function(
        "local",
        name,
        list(inputs),
        list(outputs),
        list(nodes),
        [helper.make_opsetid("", 17)],
        list(attributes),
    )


def _fn_model(fn, name="MyFn"):
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    return model(
        [helper.make_node(name, ["x"], ["y"], name="call", domain="local")], opset=opsets, functions=[fn]
    )


def test_a_good_function_passes():
    fn = _function([helper.make_node("Relu", ["a"], ["b"], name="body")])
    onyx.check(onyx.load(_fn_model(fn).SerializeToString()))


def test_function_body_reads_an_undefined_name():
    fn = _function([helper.make_node("Add", ["a", "ghost"], ["b"], name="body_add")])
    assert_caught(_fn_model(fn), "MyFn", "body_add", "'ghost'")


def test_function_output_not_produced():
    fn = _function([helper.make_node("Relu", ["a"], ["c"], name="body")])
    assert_caught(_fn_model(fn), "MyFn", "'b'")


def test_function_body_out_of_order():
    fn = _function(
        [
            helper.make_node("Abs", ["c"], ["b"], name="uses_c"),
            helper.make_node("Relu", ["a"], ["c"], name="makes_c"),
        ]
    )
    assert_caught(_fn_model(fn), "MyFn", "uses_c", "'c'")


def test_function_refers_to_an_undeclared_attribute():
    node = helper.make_node("LeakyRelu", ["a"], ["b"], name="body_leaky")
    node.attribute.add(name="alpha", type=onnx.AttributeProto.FLOAT, ref_attr_name="slope")
    fn = _function([node])
    assert_caught(_fn_model(fn), "MyFn", "body_leaky", "'slope'")


def test_function_declared_twice():
    fn = _function([helper.make_node("Relu", ["a"], ["b"])])
    m = _fn_model(fn)
    m.functions.append(fn)
    assert_caught(m, "MyFn", "twice")


def test_function_duplicate_input():
    fn = _function([helper.make_node("Add", ["a", "a"], ["b"])], inputs=("a", "a"))
    assert_caught(_fn_model(fn), "MyFn", "'a'", "twice")


def test_function_with_conflicting_default_opset():
    fn = helper.make_function(
        "local", "MyFn", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])], [helper.make_opsetid("", 13)]
    )
    assert_caught(_fn_model(fn), "MyFn", "opset 13")


def test_errors_are_all_listed():
    nodes = [
        helper.make_node("Add", ["x", "u1"], ["t"], name="n1"),
        helper.make_node("Add", ["t", "u2"], ["y"], name="n2"),
    ]
    errors = errors_of(model(nodes, ir=None))
    assert (
        any("u1" in e for e in errors)
        and any("u2" in e for e in errors)
        and any("ir_version" in e for e in errors)
    )
