"""Shape rules of RNN, GRU and LSTM: Y, Y_h (and Y_c) in both layouts, all versions."""

from __future__ import annotations

import pytest
from onnx import TensorProto as TP

from tests.shape_inference._mlctl_rules import check_case, infer_all, model, same_as_onnx, suite_cases

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
F, H, I = TP.FLOAT, 8, 5


def _inputs(op, D, layout=0, elem=F, x=None):
    g = GATES[op]
    x = x or (["seq", "N", I] if layout == 0 else ["N", "seq", I])
    return [("X", elem, x), ("W", elem, [D, g * H, I]), ("R", elem, [D, g * H, H])]


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction,D", [("forward", 1), ("reverse", 1), ("bidirectional", 2)])
@pytest.mark.parametrize("opset", [7, 14, 22])
def test_layout0_matches_onnx(op, direction, D, opset):
    n = 3 if op == "LSTM" else 2
    m = model(op, _inputs(op, D), {"hidden_size": H, "direction": direction}, opset=opset, n_out=n)
    got = same_as_onnx(m)
    assert got["y0"] == (F, [_s("seq"), D, _s("N"), H])
    for k in range(1, n):
        assert got[f"y{k}"] == (F, [D, _s("N"), H])


def _s(name):
    from onyx.ir.symbolic import Sym

    return Sym.named(name)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_layout1(op):
    n = 3 if op == "LSTM" else 2
    m = model(
        op, _inputs(op, 2, layout=1), {"hidden_size": H, "direction": "bidirectional", "layout": 1}, n_out=n
    )
    got = same_as_onnx(m)
    assert got["y0"] == (F, [_s("N"), _s("seq"), 2, H])
    for k in range(1, n):
        assert got[f"y{k}"] == (F, [_s("N"), 2, H])


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_hidden_size_from_weights(op):
    # no hidden_size attribute: from R's last dim, or W's gates*H
    y, yh = infer_all(op, _inputs(op, 1), {}, n_out=2)[:2]
    assert y == (F, [_s("seq"), 1, _s("N"), H]) and yh == (F, [1, _s("N"), H])
    ins = _inputs(op, 1)
    ins[2] = ("R", F, None)
    assert infer_all(op, ins, {}, n_out=2)[0] == (F, [_s("seq"), 1, _s("N"), H])


def test_old_versions_and_dtypes():
    # LSTM-1 / GRU-1 / RNN-1 carry legacy attributes; double stays double, float16 stays float16
    for op in GATES:
        for elem in (TP.DOUBLE, TP.FLOAT16):
            y, yh = infer_all(
                op, _inputs(op, 1, elem=elem), {"hidden_size": H, "output_sequence": 1}, opset=1, n_out=2
            )
            assert y == (elem, [_s("seq"), 1, _s("N"), H]) and yh[0] == elem


def test_partial_outputs_and_unknown_x():
    # only Y_h asked for (Y's name empty); X of unknown rank keeps the known dims
    m = model("LSTM", _inputs("LSTM", 1, x=None), {"hidden_size": H}, n_out=3)
    m.graph.node[0].output[0] = ""
    got = same_as_onnx(m)
    assert got["y1"] == (F, [1, _s("N"), H])
    y, yh, yc = infer_all(
        "GRU", [("X", F, None), ("W", F, [1, 3 * H, I]), ("R", F, [1, 3 * H, H])], {"hidden_size": H}, n_out=3
    )
    assert y == (F, [None, 1, None, H]) and yh == (F, [1, None, H])


def test_batch_arithmetic_flows_through():
    from onyx.ir.symbolic import Sym

    y, yh = infer_all("RNN", _inputs("RNN", 1, x=["2*T", "B*K", I]), {"hidden_size": H}, n_out=2)
    assert y == (F, [2 * Sym.named("T"), 1, Sym.named("B") * Sym.named("K"), H])


@pytest.mark.parametrize(
    "attrs,inputs,why",
    [
        ({"hidden_size": H, "direction": "bidirectional"}, _inputs("LSTM", 1), "directions"),
        ({"hidden_size": H + 1}, _inputs("LSTM", 1), "hidden_size"),
        ({"hidden_size": H}, [("X", F, ["s", "n", I + 1])] + _inputs("LSTM", 1)[1:], "input size"),
        ({"hidden_size": H, "direction": "sideways"}, _inputs("LSTM", 1), "direction"),
    ],
)
def test_contradictions_fail_in_strict_mode(attrs, inputs, why):
    from onyx.errors import InvalidGraph

    with pytest.raises(InvalidGraph):
        infer_all("LSTM", inputs, attrs, n_out=3)
    # not strict: outputs stay unknown instead
    from tests.shape_inference._mlctl_rules import onyx_types

    assert onyx_types(model("LSTM", inputs, attrs, n_out=3), strict=False)["y0"][1] is None


CASES = suite_cases(["rnn", "gru", "lstm"], frozenset(GATES))


def test_suite_has_cases():
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_suite(case):
    check_case(case)


def test_every_op_of_the_family_has_a_rule():
    from tests.shape_inference._mlctl_rules import ops_without_rules

    assert ops_without_rules("rnn") == []
