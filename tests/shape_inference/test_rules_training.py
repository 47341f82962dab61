"""Shape rules of the ai.onnx.preview.training ops: Adagrad, Adam, Momentum, Gradient."""

from __future__ import annotations

import onnx.helper as oh
import pytest
from onnx import TensorProto as TP

from onyx.errors import InvalidGraph
from onyx.ir.symbolic import Sym
from tests.shape_inference._mlctl_rules import (
    check_case,
    family_ops,
    graph_model,
    infer_all,
    onyx_types,
    suite_cases,
    vi,
)

TR = "ai.onnx.preview.training"
F, D = TP.FLOAT, TP.DOUBLE
N = Sym.named("N")


def _inputs(groups):
    ins = [("R", F, []), ("T", TP.INT64, [])]
    for g in groups:
        ins += [(f"{g}1", F, ["N", 3]), (f"{g}2", D, [4])]
    return ins


@pytest.mark.parametrize(
    "op,groups,outs",
    [("Adagrad", "XGH", 4), ("Momentum", "XGV", 4), ("Adam", "XGVH", 6)],
)
def test_optimizers(op, groups, outs):
    attrs = (
        {"alpha": 0.9, "beta": 0.1, "mode": "standard", "norm_coefficient": 0.0} if op == "Momentum" else {}
    )
    got = infer_all(op, _inputs(groups), attrs, domain=TR, extra_opsets={TR: 1}, n_out=outs)
    # outputs: new X for each tensor, then the new state groups (H / V / V and H)
    assert got == [(F, [N, 3]), (D, [4])] * (outs // 2)


def test_optimizer_wrong_input_count():
    with pytest.raises(InvalidGraph):
        infer_all("Adagrad", _inputs("XG"), {}, domain=TR, extra_opsets={TR: 1}, n_out=2)


def test_gradient():
    nodes = [
        oh.make_node("Mul", ["a", "b"], ["c"]),
        oh.make_node("Gradient", ["a", "b"], ["da", "db"], domain=TR, xs=["a", "b"], y="c"),
    ]
    m = graph_model(nodes, [vi("a", F, ["N", 3]), vi("b", F, [3])], ["da", "db"], extra_opsets={TR: 1})
    got = onyx_types(m)
    assert got["da"] == (F, [N, 3]) and got["db"] == (F, [3])


CASES = suite_cases(["adagrad", "adam", "momentum"], family_ops("training"))


def test_suite_has_cases():
    assert len(CASES) >= 7


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_suite(case):
    check_case(case)


def test_every_op_of_the_family_has_a_rule():
    from tests.shape_inference._mlctl_rules import ops_without_rules

    assert ops_without_rules("training") == []
