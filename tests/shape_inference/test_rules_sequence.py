"""Shape rules of the sequence ops: SequenceConstruct/Empty/Insert/At/Erase/Length, SplitToSequence,
ConcatFromSequence."""

from __future__ import annotations

import numpy as np
import onnx.helper as oh
import pytest
from onnx import TensorProto as TP

from onyx.errors import InvalidGraph
from onyx.ir.symbolic import Sym
from onyx.ir.types import SequenceType, TensorType
from tests.shape_inference._mlctl_rules import (
    check_case,
    graph_model,
    infer,
    infer_type,
    onyx_all_types,
    same_as_onnx,
    same_as_run,
    seq_type,
    suite_cases,
    vi,
)

F = TP.FLOAT
N, K = Sym.named("N"), Sym.named("K")
S = ("s", seq_type(F, ["N", 3]))


def seq(elem, dims):
    return SequenceType(TensorType(elem, dims))


def test_construct_keeps_common_dims():
    ins = [("a", F, ["N", 3]), ("b", F, ["N", 3])]
    assert infer_type("SequenceConstruct", ins) == seq(F, ["N", 3])
    ins = [("a", F, ["N", 3]), ("b", F, ["N", 4])]
    assert infer_type("SequenceConstruct", ins) == seq(F, ["N", None])
    ins = [("a", F, ["N", 3]), ("b", F, [3])]
    assert infer_type("SequenceConstruct", ins) == seq(F, None)
    with pytest.raises(InvalidGraph):
        infer_type("SequenceConstruct", [("a", F, [3]), ("b", TP.INT64, [3])])


def test_empty_insert_at_erase_length_chain():
    nodes = [
        oh.make_node("SequenceConstruct", ["a", "a"], ["s0"]),
        oh.make_node("SequenceInsert", ["s0", "a"], ["s1"]),
        oh.make_node("SequenceAt", ["s1", "p"], ["t"]),
        oh.make_node("SequenceErase", ["s1"], ["s2"]),
        oh.make_node("SequenceLength", ["s2"], ["n"]),
    ]
    m = graph_model(nodes, [vi("a", F, ["N", 3]), vi("p", TP.INT64, [])], ["t", "s2", "n"])
    got = onyx_all_types(m)
    assert got["s1"] == seq(F, ["N", 3]) and got["s2"] == seq(F, ["N", 3])
    assert got["t"] == TensorType(F, ["N", 3]) and got["n"] == TensorType(TP.INT64, [])
    same_as_onnx(m)
    same_as_run(m, {"a": np.ones((2, 3), np.float32), "p": np.array(-1)})


def test_insert_widens_and_checks_type():
    assert infer_type("SequenceInsert", [S, ("t", F, ["N", 5])]) == seq(F, ["N", None])
    with pytest.raises(InvalidGraph):
        infer_type("SequenceInsert", [S, ("t", TP.INT64, ["N", 3])])
    with pytest.raises(InvalidGraph):
        infer_type("SequenceAt", [("t", F, [3]), ("p", TP.INT64, [])])


def test_sequence_empty():
    t = infer_type("SequenceEmpty", [], {"dtype": TP.INT64})
    # constant folding runs the kernel (an empty list) before the rule: the element type may be lost
    assert isinstance(t, SequenceType) and t.elem in (None, TensorType(TP.INT64, None))


@pytest.mark.parametrize(
    "x,split,attrs,want",
    [
        (["N", 6], None, {"axis": 1}, ["N", 1]),
        (["N", 6], None, {"axis": 1, "keepdims": 0}, ["N"]),
        (["N", 6], np.array(2, np.int64), {"axis": -1}, ["N", 2]),
        (["N", 7], np.array(2, np.int64), {"axis": 1}, ["N", None]),
        ([6, "K"], np.array([3, 3], np.int64), {}, [3, "K"]),
        ([6, "K"], np.array([2, 4], np.int64), {}, [None, "K"]),
    ],
)
def test_split_to_sequence(x, split, attrs, want):
    from tests.shape_inference._mlctl_rules import model

    ins = [("x", F, x)] + ([("split", TP.INT64, list(split.shape))] if split is not None else [])
    m = model("SplitToSequence", ins, attrs, inits={"split": split} if split is not None else None)
    got = onyx_all_types(m)["y0"]
    assert got == seq(F, want)
    same_as_onnx(m)
    feed = {"x": np.ones([2 if isinstance(d, str) else d for d in x], np.float32)}
    same_as_run(m, feed)


def test_split_to_sequence_bad_split():
    from tests.shape_inference._mlctl_rules import model, onyx_types

    m = model(
        "SplitToSequence", [("x", F, [6]), ("split", TP.INT64, [2])], {}, inits={"split": np.array([2, 2])}
    )
    with pytest.raises(InvalidGraph):
        onyx_types(m)


@pytest.mark.parametrize(
    "attrs,want",
    [
        ({"axis": 0}, [None, 3]),
        ({"axis": 1, "new_axis": 1}, ["N", None, 3]),
        ({"axis": -1, "new_axis": 1}, ["N", 3, None]),
    ],
)
def test_concat_from_sequence(attrs, want):
    elem, dims = infer("ConcatFromSequence", [S], attrs)
    assert elem == F and len(dims) == len(want)
    for d, w in zip(dims, want):
        assert (isinstance(d, Sym) and "unk__" in str(d)) if w is None else d == (N if w == "N" else w)
    with pytest.raises(InvalidGraph):
        infer("ConcatFromSequence", [S], {"axis": 3, "new_axis": 1})


def test_concat_from_sequence_runs():
    nodes = [
        oh.make_node("SequenceConstruct", ["a", "a"], ["s"]),
        oh.make_node("ConcatFromSequence", ["s"], ["y"], axis=1, new_axis=1),
    ]
    m = graph_model(nodes, [vi("a", F, ["N", 3])], ["y"])
    same_as_onnx(m)
    same_as_run(m, {"a": np.ones((2, 3), np.float32)})


CASES = suite_cases(
    ["sequenceinsert", "splittosequence"],
    frozenset({"SequenceInsert", "SplitToSequence", "SequenceAt", "SequenceConstruct", "ConcatFromSequence"}),
)


def test_suite_has_cases():
    assert len(CASES) >= 5


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_suite(case):
    check_case(case)


def test_every_op_of_the_family_has_a_rule():
    from tests.shape_inference._mlctl_rules import ops_without_rules

    assert ops_without_rules("sequence") == []
