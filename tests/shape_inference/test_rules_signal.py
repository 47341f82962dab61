"""Shape rules of DFT, STFT, the windows and MelWeightMatrix."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP

from onyx.errors import InvalidGraph
from onyx.ir.symbolic import Sym
from tests.shape_inference._mlctl_rules import (
    check_case,
    family_ops,
    infer,
    model,
    same_as_onnx,
    same_as_run,
    suite_cases,
)

F = TP.FLOAT
B = Sym.named("B")
I64 = np.int64


def _x(*shape):
    return np.random.default_rng(0).random(shape, dtype=np.float32)


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
def test_windows(op):
    m = model(
        op, [("n", TP.INT64, [])], {"output_datatype": TP.DOUBLE}, opset=17, inits={"n": np.array(10, I64)}
    )
    assert same_as_onnx(m)["y0"] == (TP.DOUBLE, [10])
    same_as_run(m, {})
    elem, dims = infer(op, [("n", TP.INT64, [])], opset=17)
    assert elem == F and isinstance(dims[0], Sym)


@pytest.mark.parametrize(
    "attrs,length,want",
    [
        ({"axis": 1}, None, [B, 8, 3, 2]),
        ({"axis": 1, "onesided": 1}, None, [B, 5, 3, 2]),
        ({"axis": 2, "onesided": 1}, 6, [B, 8, 4, 2]),
        ({"axis": 1, "inverse": 1}, 5, [B, 5, 3, 2]),
        ({"axis": -2, "inverse": 1, "onesided": 1}, None, [B, 8, 4, 1]),
    ],
)
def test_dft17(attrs, length, want):
    inits = {"n": np.array(length, I64)} if length is not None else None
    ins = [("x", F, ["B", 8, 3, 1 if not attrs.get("inverse") else 2])] + (
        [("n", TP.INT64, [])] if inits else []
    )
    m = model("DFT", ins, attrs, opset=17, inits=inits)
    assert same_as_onnx(m)["y0"] == (F, want)
    x = _x(2, 8, 3, ins[0][2][3])
    same_as_run(m, {"x": x})


@pytest.mark.parametrize("axis,want", [(1, [B, 5, 3, 2]), (-3, [B, 5, 3, 2]), (2, [B, 8, 2, 2])])
def test_dft20_axis_input(axis, want):
    inits = {"a": np.array(axis, I64)}
    m = model(
        "DFT",
        [("x", F, ["B", 8, 3, 1]), ("", None, None), ("a", TP.INT64, [])],
        {"onesided": 1},
        opset=20,
        inits=inits,
    )
    assert same_as_onnx(m)["y0"] == (F, want)
    same_as_run(m, {"x": _x(2, 8, 3, 1)})


def test_dft_bad_input():
    with pytest.raises(InvalidGraph):
        infer("DFT", [("x", F, [4, 3])], {"axis": 1}, opset=17)
    with pytest.raises(InvalidGraph):
        infer("DFT", [("x", F, [4, 3, 1])], {"axis": 2}, opset=17)


@pytest.mark.parametrize(
    "window,flen,onesided,want",
    [(True, None, 1, [B, 7, 5, 2]), (False, 8, 0, [B, 7, 8, 2]), (True, 8, 1, [B, 7, 5, 2])],
)
def test_stft(window, flen, onesided, want):
    inits = {"step": np.array(4, I64)}
    ins = [("x", F, ["B", 32, 1]), ("step", TP.INT64, [])]
    ins.append(("w", F, [8]) if window else ("", None, None))
    if flen is not None:
        ins.append(("flen", TP.INT64, []))
        inits["flen"] = np.array(flen, I64)
    m = model("STFT", ins, {"onesided": onesided}, opset=17, inits=inits)
    assert same_as_onnx(m)["y0"] == (F, want)
    feeds = {"x": _x(2, 32, 1)}
    if window:
        feeds["w"] = np.hanning(8).astype(np.float32)
    same_as_run(m, feeds)


def test_mel_weight_matrix():
    inits = {
        "m": np.array(8, I64),
        "n": np.array(16, I64),
        "r": np.array(8000, I64),
        "lo": np.array(0.0, np.float32),
        "hi": np.array(4000.0, np.float32),
    }
    ins = [(k, TP.INT64 if v.dtype == I64 else F, []) for k, v in inits.items()]
    m = model("MelWeightMatrix", ins, {"output_datatype": TP.DOUBLE}, opset=17, inits=inits)
    assert same_as_onnx(m)["y0"] == (TP.DOUBLE, [9, 8])
    # unknown values: fresh symbols
    elem, dims = infer("MelWeightMatrix", ins, opset=17)
    assert elem == F and all(isinstance(d, Sym) for d in dims)


CASES = suite_cases(
    ["blackmanwindow", "hammingwindow", "hannwindow", "dft", "stft", "melweightmatrix"], family_ops("signal")
)
# opset-20 DFT whose axis is a graph input: a onesided transform changes an axis not known at load time
AXIS_UNKNOWN = {"test_dft_rfft", "test_dft_irfft"}


def test_suite_has_cases():
    assert len(CASES) >= 15


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_suite(case):
    check_case(case, require_known=case.name not in AXIS_UNKNOWN)


def test_every_op_of_the_family_has_a_rule():
    from tests.shape_inference._mlctl_rules import ops_without_rules

    assert ops_without_rules("signal") == []
