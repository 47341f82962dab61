"""Model-local functions and control-flow subgraphs reading outer-scope values, against onnxruntime."""

from __future__ import annotations

import numpy as np
from onnx import AttributeProto, TensorProto, helper

from tests.runtime._util import compare_with_ort, make_model, tensor

LOCAL = "local.fn"


def _ref_attr(name: str, ref: str, attr_type: int) -> AttributeProto:
    a = AttributeProto()
    a.name = name
    a.ref_attr_name = ref
    a.type = attr_type
    return a


def _leaky_fn():
    """LeakyScale(x) = LeakyRelu(x, alpha=@alpha) * @scale, with alpha defaulting to 0.2 (attribute_proto)."""
    leaky = helper.make_node("LeakyRelu", ["x"], ["l"])
    leaky.attribute.append(_ref_attr("alpha", "alpha", AttributeProto.FLOAT))
    const = helper.make_node("Constant", [], ["s"])
    const.attribute.append(_ref_attr("value_float", "scale", AttributeProto.FLOAT))
    mul = helper.make_node("Mul", ["l", "s"], ["y"])
    fn = helper.make_function(
        LOCAL,
        "LeakyScale",
        ["x"],
        ["y"],
        [leaky, const, mul],
        [helper.make_opsetid("", 17)],
        attributes=["scale"],
    )
    fn.attribute_proto.append(helper.make_attribute("alpha", 0.2))
    return fn


def test_function_with_attribute_references_and_defaults():
    x = np.array([[-2.0, -0.5, 0.0, 1.5]], np.float32)
    fn = _leaky_fn()
    for attrs in ({"scale": 3.0}, {"scale": 0.5, "alpha": 0.01}):
        model = make_model(
            [helper.make_node("LeakyScale", ["x"], ["y"], domain=LOCAL, **attrs)],
            [tensor("x", TensorProto.FLOAT, [1, 4])],
            [tensor("y", TensorProto.FLOAT, None)],
            extra_opsets={LOCAL: 1},
            functions=[fn],
        )
        compare_with_ort(model, {"x": x})


def test_function_called_twice_with_different_attributes_and_several_outputs():
    body = [
        helper.make_node("Add", ["a", "b"], ["s"]),
        helper.make_node("Sub", ["a", "b"], ["d"]),
        helper.make_node("LeakyScale", ["s"], ["ls"], domain=LOCAL, scale=2.0),
    ]
    pair = helper.make_function(
        LOCAL,
        "SumDiff",
        ["a", "b"],
        ["ls", "d"],
        body,
        [helper.make_opsetid("", 17), helper.make_opsetid(LOCAL, 1)],
    )
    nodes = [
        helper.make_node("SumDiff", ["x", "y"], ["p", "q"], domain=LOCAL),
        helper.make_node("SumDiff", ["p", "q"], ["r", "t"], domain=LOCAL),
    ]
    model = make_model(
        nodes,
        [tensor("x", TensorProto.FLOAT, [3]), tensor("y", TensorProto.FLOAT, [3])],
        [tensor("r", TensorProto.FLOAT, None), tensor("t", TensorProto.FLOAT, None)],
        extra_opsets={LOCAL: 1},
        functions=[pair, _leaky_fn()],
    )
    feeds = {"x": np.array([1.0, -2.0, 3.0], np.float32), "y": np.array([0.5, 0.5, -4.0], np.float32)}
    compare_with_ort(model, feeds)


def test_nested_functions_forwarding_attributes():
    # Outer(x; k) = Inner(x; alpha=@k) + 1; Inner(x; alpha) = LeakyScale(x; alpha=@alpha, scale=10)
    inner_call = helper.make_node("LeakyScale", ["x"], ["y"], domain=LOCAL, scale=10.0)
    inner_call.attribute.append(_ref_attr("alpha", "alpha", AttributeProto.FLOAT))
    inner = helper.make_function(
        LOCAL, "Inner", ["x"], ["y"], [inner_call], [helper.make_opsetid(LOCAL, 1)], attributes=["alpha"]
    )
    outer_call = helper.make_node("Inner", ["x"], ["i"], domain=LOCAL)
    outer_call.attribute.append(_ref_attr("alpha", "k", AttributeProto.FLOAT))
    one = helper.make_node("Constant", [], ["one"], value_float=1.0)
    add = helper.make_node("Add", ["i", "one"], ["y"])
    outer = helper.make_function(
        LOCAL,
        "Outer",
        ["x"],
        ["y"],
        [outer_call, one, add],
        [helper.make_opsetid("", 17), helper.make_opsetid(LOCAL, 1)],
        attributes=["k"],
    )
    x = np.array([-3.0, -1.0, 2.0], np.float32)
    model = make_model(
        [helper.make_node("Outer", ["x"], ["y"], domain=LOCAL, k=0.3)],
        [tensor("x", TensorProto.FLOAT, [3])],
        [tensor("y", TensorProto.FLOAT, None)],
        extra_opsets={LOCAL: 1},
        functions=[outer, inner, _leaky_fn()],
    )
    compare_with_ort(model, {"x": x})


def test_function_body_with_an_if_subgraph():
    then = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["t"])], "then", [], [tensor("t", TensorProto.FLOAT, None)]
    )
    other = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["e"])], "else", [], [tensor("e", TensorProto.FLOAT, None)]
    )
    fn = helper.make_function(
        LOCAL,
        "NegOrAbs",
        ["c", "x"],
        ["y"],
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
        [helper.make_opsetid("", 17)],
    )
    model = make_model(
        [helper.make_node("NegOrAbs", ["c", "x"], ["y"], domain=LOCAL)],
        [tensor("c", TensorProto.BOOL, []), tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, None)],
        extra_opsets={LOCAL: 1},
        functions=[fn],
    )
    x = np.array([-1.0, 2.0], np.float32)
    for c in (True, False):
        compare_with_ort(model, {"c": np.array(c), "x": x})


# -- subgraphs reading outer-scope values -------------------------------------------------------


def test_if_branches_read_outer_values():
    then = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["t"])], "then", [], [tensor("t", TensorProto.FLOAT, None)]
    )
    other = helper.make_graph(
        [helper.make_node("Mul", ["h", "w"], ["e"])], "else", [], [tensor("e", TensorProto.FLOAT, None)]
    )
    nodes = [
        helper.make_node("Relu", ["x"], ["h"]),
        helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other),
        helper.make_node("Sub", ["y", "h"], ["z"]),  # h used again after the If
    ]
    model = make_model(
        nodes,
        [tensor("c", TensorProto.BOOL, []), tensor("x", TensorProto.FLOAT, [3])],
        [tensor("z", TensorProto.FLOAT, None)],
        initializers=[helper.make_tensor("w", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])],
    )
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    for c in (True, False):
        compare_with_ort(model, {"c": np.array(c), "x": x})


def test_loop_body_reads_outer_values_and_scans_outputs():
    body = helper.make_graph(
        [
            helper.make_node("Mul", ["acc_in", "factor"], ["m"]),  # factor: outer graph input
            helper.make_node("Add", ["m", "h"], ["acc_out"]),  # h: computed in the outer graph
            helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["acc_out", "fi"], ["scan"]),
            helper.make_node("Less", ["fi", "limit"], ["cond_out"]),
        ],
        "body",
        [
            tensor("i", TensorProto.INT64, []),
            tensor("cond_in", TensorProto.BOOL, []),
            tensor("acc_in", TensorProto.FLOAT, None),
        ],
        [
            tensor("cond_out", TensorProto.BOOL, []),
            tensor("acc_out", TensorProto.FLOAT, None),
            tensor("scan", TensorProto.FLOAT, None),
        ],
    )
    nodes = [
        helper.make_node("Exp", ["x"], ["h"]),
        helper.make_node("Loop", ["n", "cond", "x"], ["acc", "scans"], body=body),
    ]
    model = make_model(
        nodes,
        [
            tensor("n", TensorProto.INT64, []),
            tensor("cond", TensorProto.BOOL, []),
            tensor("x", TensorProto.FLOAT, [2]),
            tensor("factor", TensorProto.FLOAT, []),
            tensor("limit", TensorProto.FLOAT, []),
        ],
        [tensor("acc", TensorProto.FLOAT, None), tensor("scans", TensorProto.FLOAT, None)],
    )
    base = {
        "x": np.array([0.1, -0.2], np.float32),
        "factor": np.array(0.5, np.float32),
        "cond": np.array(True),
    }
    for n, limit in ((5, 100.0), (5, 2.0), (0, 10.0)):
        feeds = dict(base, n=np.array(n, np.int64), limit=np.array(limit, np.float32))
        compare_with_ort(model, feeds)


def test_if_inside_loop_reads_values_two_levels_up():
    # the If's branches read `w` (main graph), `acc_in` (the Loop body) and their own values
    then = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "w"], ["t"])], "then", [], [tensor("t", TensorProto.FLOAT, None)]
    )
    other = helper.make_graph(
        [helper.make_node("Mul", ["acc_in", "w"], ["e0"]), helper.make_node("Sub", ["e0", "bias"], ["e"])],
        "else",
        [],
        [tensor("e", TensorProto.FLOAT, None)],
    )
    body = helper.make_graph(
        [
            helper.make_node("Mod", ["i", "two"], ["r"]),
            helper.make_node("Equal", ["r", "zero"], ["even"]),
            helper.make_node("If", ["even"], ["acc_out"], then_branch=then, else_branch=other),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            tensor("i", TensorProto.INT64, []),
            tensor("cond_in", TensorProto.BOOL, []),
            tensor("acc_in", TensorProto.FLOAT, None),
        ],
        [tensor("cond_out", TensorProto.BOOL, []), tensor("acc_out", TensorProto.FLOAT, None)],
    )
    nodes = [
        helper.make_node("Neg", ["x"], ["bias"]),
        helper.make_node("Loop", ["n", "", "x"], ["acc"], body=body),
    ]
    model = make_model(
        nodes,
        [tensor("n", TensorProto.INT64, []), tensor("x", TensorProto.FLOAT, [3])],
        [tensor("acc", TensorProto.FLOAT, None)],
        initializers=[
            helper.make_tensor("w", TensorProto.FLOAT, [3], [0.5, 1.0, 2.0]),
            helper.make_tensor("two", TensorProto.INT64, [], [2]),
            helper.make_tensor("zero", TensorProto.INT64, [], [0]),
        ],
    )
    x = np.array([1.0, -1.0, 0.25], np.float32)
    for n in (0, 1, 4, 7):
        compare_with_ort(model, {"n": np.array(n, np.int64), "x": x})


def test_scan_body_reads_outer_value():
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "row"], ["s_out"]),
            helper.make_node("Mul", ["row", "k"], ["y"]),  # k from the outer graph
        ],
        "body",
        [tensor("s_in", TensorProto.FLOAT, [2]), tensor("row", TensorProto.FLOAT, [2])],
        [tensor("s_out", TensorProto.FLOAT, [2]), tensor("y", TensorProto.FLOAT, [2])],
    )
    model = make_model(
        [
            helper.make_node("Sqrt", ["kk"], ["k"]),
            helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1),
        ],
        [
            tensor("s0", TensorProto.FLOAT, [2]),
            tensor("xs", TensorProto.FLOAT, [4, 2]),
            tensor("kk", TensorProto.FLOAT, []),
        ],
        [tensor("s", TensorProto.FLOAT, None), tensor("ys", TensorProto.FLOAT, None)],
    )
    feeds = {
        "s0": np.zeros(2, np.float32),
        "xs": np.arange(8, dtype=np.float32).reshape(4, 2),
        "kk": np.array(4.0, np.float32),
    }
    compare_with_ort(model, feeds)


def test_attribute_reference_inside_a_subgraph_of_a_function():
    leaky = helper.make_node("LeakyRelu", ["x"], ["t"])
    leaky.attribute.append(_ref_attr("alpha", "slope", AttributeProto.FLOAT))
    then = helper.make_graph([leaky], "then", [], [tensor("t", TensorProto.FLOAT, None)])
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [tensor("e", TensorProto.FLOAT, None)]
    )
    fn = helper.make_function(
        LOCAL,
        "MaybeLeaky",
        ["c", "x"],
        ["y"],
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
        [helper.make_opsetid("", 17)],
        attributes=["slope"],
    )
    x = np.array([-1.0, 2.0], np.float32)
    for attrs in ({"slope": 0.25}, {}):  # unset: LeakyRelu's own default alpha applies
        model = make_model(
            [helper.make_node("MaybeLeaky", ["c", "x"], ["y"], domain=LOCAL, **attrs)],
            [tensor("c", TensorProto.BOOL, []), tensor("x", TensorProto.FLOAT, [2])],
            [tensor("y", TensorProto.FLOAT, None)],
            extra_opsets={LOCAL: 1},
            functions=[fn],
        )
        for c in (True, False):
            compare_with_ort(model, {"c": np.array(c), "x": x})
