"""Shape rules of Optional, OptionalGetElement and OptionalHasElement."""

from __future__ import annotations

import numpy as np
import onnx.helper as oh
import pytest
from onnx import TensorProto as TP

from onyx.errors import InvalidGraph
from onyx.ir.types import OptionalType, SequenceType, TensorType
from tests.shape_inference._mlctl_rules import (
    check_case,
    family_ops,
    graph_model,
    infer,
    infer_type,
    onyx_all_types,
    opt_type,
    same_as_run,
    seq_type,
    suite_cases,
    vi,
)

F = TP.FLOAT
OPT_T = ("o", opt_type(oh.make_tensor_type_proto(F, ["N", 3])))
OPT_S = ("o", opt_type(seq_type(TP.INT64, [2])))


def test_optional_wraps_its_input():
    t = infer_type("Optional", [("x", F, ["N", 3])], opset=15)
    assert t == OptionalType(TensorType(F, ["N", 3]))
    t = infer_type("Optional", [("s", seq_type(F, [2]))], opset=18)
    assert t == OptionalType(SequenceType(TensorType(F, [2])))
    with pytest.raises(InvalidGraph):
        infer_type("Optional", [OPT_T], opset=18)


def test_empty_optional_from_type_attribute():
    # with no input the node is constant-folded (to an empty optional, None) before the rule runs;
    # in a graph where it is fed, its type comes from the rule
    nodes = [
        oh.make_node("Optional", [], ["e"], type=oh.make_tensor_type_proto(F, [2])),
        oh.make_node("OptionalHasElement", ["e"], ["h"]),
    ]
    got = onyx_all_types(graph_model(nodes, [], ["h"], opset=18))
    assert got["h"] == TensorType(TP.BOOL, [])


def test_get_element():
    assert infer("OptionalGetElement", [OPT_T], opset=15) == (F, [_n(), 3])
    assert infer_type("OptionalGetElement", [OPT_S], opset=18) == SequenceType(TensorType(TP.INT64, [2]))
    # from 18 a plain tensor passes through; before, it is an error
    assert infer("OptionalGetElement", [("x", TP.INT8, [4])], opset=18) == (TP.INT8, [4])
    with pytest.raises(InvalidGraph):
        infer("OptionalGetElement", [("x", TP.INT8, [4])], opset=15)


def _n():
    from onyx.ir.symbolic import Sym

    return Sym.named("N")


@pytest.mark.parametrize(
    "inputs,opset", [([OPT_T], 15), ([OPT_S], 18), ([("x", F, [2])], 18), ([("", F, [2])], 18)]
)
def test_has_element(inputs, opset):
    assert infer("OptionalHasElement", inputs, opset=opset) == (TP.BOOL, [])


def test_has_element_needs_an_optional_before_18():
    with pytest.raises(InvalidGraph):
        infer("OptionalHasElement", [("x", F, [2])], opset=15)


def test_chain_runs():
    nodes = [
        oh.make_node("Optional", ["x"], ["o"]),
        oh.make_node("OptionalHasElement", ["o"], ["h"]),
        oh.make_node("OptionalGetElement", ["o"], ["g"]),
    ]
    m = graph_model(nodes, [vi("x", F, ["N", 3])], ["h", "g"], opset=18)
    got = onyx_all_types(m)
    assert got["o"] == OptionalType(TensorType(F, ["N", 3])) and got["g"] == TensorType(F, ["N", 3])
    same_as_run(m, {"x": np.ones((2, 3), np.float32)})


CASES = suite_cases(["optionalgetelement", "optionalhaselement"], family_ops("optional"))


def test_suite_has_cases():
    assert len(CASES) >= 8


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_suite(case):
    check_case(case)


def test_every_op_of_the_family_has_a_rule():
    from tests.shape_inference._mlctl_rules import ops_without_rules

    assert ops_without_rules("optional") == []
