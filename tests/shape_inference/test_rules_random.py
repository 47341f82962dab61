"""Shape rules of the random ops: shape from the attribute or the input, type from dtype."""

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

N = Sym.named("N")


@pytest.mark.parametrize("op", ["RandomNormal", "RandomUniform"])
@pytest.mark.parametrize("dtype", [None, TP.DOUBLE, TP.FLOAT16])
def test_from_attributes(op, dtype):
    attrs = {"shape": [2, 3, 4], "seed": 1.0}
    if dtype is not None:
        attrs["dtype"] = dtype
    m = model(op, [], attrs)
    assert same_as_onnx(m)["y0"] == (dtype or TP.FLOAT, [2, 3, 4])
    # onnxruntime has no float16 random kernels: run onyx's
    same_as_run(m, {}, oracle="onyx" if dtype == TP.FLOAT16 else "onnxruntime")


@pytest.mark.parametrize("op", ["RandomNormalLike", "RandomUniformLike", "Bernoulli"])
@pytest.mark.parametrize("dtype", [None, TP.DOUBLE])
def test_like_input(op, dtype):
    attrs = {"seed": 2.0} if dtype is None else {"dtype": dtype, "seed": 2.0}
    m = model(op, [("x", TP.FLOAT, ["N", 5])], attrs, opset=15)
    assert same_as_onnx(m)["y0"] == (dtype or TP.FLOAT, [N, 5])
    same_as_run(m, {"x": np.full((3, 5), 0.5, np.float32)})


@pytest.mark.parametrize("dtype", [None, TP.INT64])
def test_multinomial(dtype):
    attrs = {"sample_size": 7, "seed": 3.0}
    if dtype is not None:
        attrs["dtype"] = dtype
    m = model("Multinomial", [("x", TP.FLOAT, ["N", 4])], attrs, opset=7)
    assert same_as_onnx(m)["y0"] == (dtype or TP.INT32, [N, 7])
    same_as_run(m, {"x": np.zeros((2, 4), np.float32)})
    with pytest.raises(InvalidGraph):
        infer("Multinomial", [("x", TP.FLOAT, [4])], attrs, opset=7)


CASES = suite_cases(["bernoulli"], family_ops("random"))


def test_suite_has_cases():
    assert len(CASES) >= 3


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_suite(case):
    check_case(case)


def test_every_op_of_the_family_has_a_rule():
    from tests.shape_inference._mlctl_rules import ops_without_rules

    assert ops_without_rules("random") == []
