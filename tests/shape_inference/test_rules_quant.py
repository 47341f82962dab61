"""Shape rules of QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and QLinearMatMul."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP

from onyx.errors import InvalidGraph
from onyx.ir.symbolic import Sym
from tests.shape_inference._mlctl_rules import (
    check_case,
    infer,
    infer_all,
    model,
    same_as_onnx,
    suite_cases,
)

N, C = Sym.named("N"), Sym.named("C")
X = ("x", TP.FLOAT, ["N", "C", 4])


@pytest.mark.parametrize("zp", [TP.UINT8, TP.INT8, TP.INT16, TP.UINT16, TP.INT4, TP.FLOAT8E4M3FN])
@pytest.mark.parametrize("opset", [13, 19, 21, 23])
def test_quantize_takes_zero_point_type(zp, opset):
    if opset < 21 and zp in (TP.INT16, TP.UINT16, TP.INT4):
        pytest.skip("type not in this version")
    if opset < 19 and zp == TP.FLOAT8E4M3FN:
        pytest.skip("type not in this version")
    m = model("QuantizeLinear", [X, ("s", TP.FLOAT, []), ("z", zp, [])], opset=opset)
    assert same_as_onnx(m)["y0"] == (zp, [N, C, 4])


def test_quantize_default_uint8_and_output_dtype():
    assert infer("QuantizeLinear", [X, ("s", TP.FLOAT, [])], opset=13) == (TP.UINT8, [N, C, 4])
    m = model("QuantizeLinear", [X, ("s", TP.FLOAT, ["C"])], {"output_dtype": TP.INT8, "axis": 1}, opset=21)
    assert same_as_onnx(m)["y0"] == (TP.INT8, [N, C, 4])
    # output_dtype disagreeing with the zero point is a contradiction
    with pytest.raises(InvalidGraph):
        infer(
            "QuantizeLinear",
            [X, ("s", TP.FLOAT, []), ("z", TP.UINT8, [])],
            {"output_dtype": TP.INT8},
            opset=21,
        )


@pytest.mark.parametrize(
    "scale,opset,want",
    [
        (TP.FLOAT, 13, TP.FLOAT),
        (TP.FLOAT16, 19, TP.FLOAT16),
        (TP.BFLOAT16, 21, TP.BFLOAT16),
        (TP.FLOAT, 23, TP.FLOAT),
    ],
)
def test_dequantize_takes_scale_type(scale, opset, want):
    m = model(
        "DequantizeLinear", [("x", TP.INT8, ["N", 3]), ("s", scale, []), ("z", TP.INT8, [])], opset=opset
    )
    assert same_as_onnx(m)["y0"] == (want, [N, 3])


def test_dequantize_output_dtype_and_e8m0_scale():
    ins = [("x", TP.INT8, ["N", 3]), ("s", TP.FLOAT, [])]
    assert infer("DequantizeLinear", ins, {"output_dtype": TP.FLOAT16}, opset=23) == (TP.FLOAT16, [N, 3])
    ins = [("x", TP.INT8, ["N", 3]), ("s", TP.FLOAT8E8M0, [])]
    assert infer("DequantizeLinear", ins, opset=24) == (TP.FLOAT, [N, 3])
    with pytest.raises(InvalidGraph):
        infer("DequantizeLinear", [("x", TP.INT8, [2]), ("s", TP.FLOAT, []), ("z", TP.UINT8, [])], opset=21)


def test_dynamic_quantize():
    m = model("DynamicQuantizeLinear", [("x", TP.FLOAT, ["N", 7])], n_out=3, opset=11)
    got = same_as_onnx(m)
    assert got["y0"] == (TP.UINT8, [N, 7]) and got["y1"] == (TP.FLOAT, []) and got["y2"] == (TP.UINT8, [])


def _qmm(a, b, elem=TP.UINT8, out=TP.UINT8, opset=21):
    return model(
        "QLinearMatMul",
        [
            ("a", elem, a),
            ("sa", TP.FLOAT, []),
            ("za", elem, []),
            ("b", elem, b),
            ("sb", TP.FLOAT, []),
            ("zb", elem, []),
            ("sy", TP.FLOAT, []),
            ("zy", out, []),
        ],
        opset=opset,
    )


@pytest.mark.parametrize(
    "a,b,want",
    [
        (["N", 4], [4, 5], [N, 5]),
        (["B", 1, "M", 4], [3, 4, 6], [Sym.named("B"), 3, Sym.named("M"), 6]),
        ([4], [4, 6], [6]),
        (["N", 4], [4], [N]),
    ],
)
def test_qlinear_matmul(a, b, want):
    assert same_as_onnx(_qmm(a, b))["y0"] == (TP.UINT8, want)


def test_qlinear_matmul_output_type_and_mismatch():
    assert infer_all("QLinearMatMul", _qmm_inputs(TP.INT8, TP.UINT8))[0][0] == TP.UINT8
    with pytest.raises(InvalidGraph):
        from tests.shape_inference._mlctl_rules import onyx_types

        onyx_types(_qmm(["N", 4], [5, 6]))


def _qmm_inputs(elem, out):
    return [
        ("a", elem, [2, 4]),
        ("sa", TP.FLOAT, []),
        ("za", elem, []),
        ("b", elem, [4, 3]),
        ("sb", TP.FLOAT, []),
        ("zb", elem, []),
        ("sy", TP.FLOAT, []),
        ("zy", out, []),
    ]


def test_scalar_initializer_zero_point():
    # zero point from an initializer: its type is known without a declared input
    m = model(
        "QuantizeLinear",
        [X, ("s", TP.FLOAT, []), ("z", TP.INT8, [])],
        inits={"s": np.array(0.5, np.float32), "z": np.array(3, np.int8)},
    )
    assert same_as_onnx(m)["y0"] == (TP.INT8, [N, C, 4])


CASES = suite_cases(
    ["quantizelinear", "dequantizelinear", "dynamicquantizelinear", "qlinearmatmul"],
    frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearMatMul"}),
)


def test_suite_has_cases():
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_suite(case):
    check_case(case)


def test_every_op_of_the_family_has_a_rule():
    from tests.shape_inference._mlctl_rules import ops_without_rules

    assert ops_without_rules("quant") == []
