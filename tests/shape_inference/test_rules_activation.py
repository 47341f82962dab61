"""Shape rules of the activation family (src/onyx/ops/activation), against onnx and the node suite."""

import pytest
from onnx import TensorProto as T

from onyx.errors import InvalidGraph
from tests.shape_inference._oprules import (
    check_case,
    dims_str,
    family_ops,
    infer,
    model,
    same_as_onnx,
    suite_cases,
)

F, H, BF, D = T.FLOAT, T.FLOAT16, T.BFLOAT16, T.DOUBLE

# op -> (opset, attributes)
UNARY = {
    "Celu": (12, {"alpha": 2.0}),
    "Elu": (6, {"alpha": 0.5}),
    "Gelu": (20, {"approximate": "tanh"}),
    "HardSigmoid": (6, {"alpha": 0.3, "beta": 0.4}),
    "HardSwish": (14, {}),
    "LeakyRelu": (6, {"alpha": 0.2}),
    "Mish": (18, {}),
    "Relu": (14, {}),
    "Selu": (6, {}),
    "Shrink": (9, {"lambd": 1.0, "bias": 0.5}),
    "Sigmoid": (13, {}),
    "Softplus": (1, {}),
    "Softsign": (1, {}),
    "Swish": (24, {"alpha": 1.5}),
    "Tanh": (13, {}),
    "ThresholdedRelu": (10, {"alpha": 2.0}),
}
LEGACY = {"Elu", "HardSigmoid", "LeakyRelu", "Relu", "Selu", "Sigmoid", "Tanh"}  # opset-1 forms
AXIS_OPS = ["Softmax", "LogSoftmax", "Hardmax"]


def test_every_op_of_the_family_is_covered():
    assert family_ops("activation") == set(UNARY) | set(AXIS_OPS) | {"PRelu", "SwiGLU"}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("elem", [F, H, D])
def test_unary_keeps_type_and_shape(op, elem):
    opset, attrs = UNARY[op]
    ours = same_as_onnx(model(op, [("x", elem, ["N", "seq", 8])], attrs, opset=max(opset, 22)))
    assert ours["y0"][0] == elem and dims_str(ours["y0"][1]) == ["N", "seq", 8]
    ours = same_as_onnx(model(op, [("x", elem, [])], attrs, opset=opset))
    assert ours["y0"] == (elem, [])
    assert same_as_onnx(model(op, [("x", elem, None)], attrs, opset=opset))["y0"] == (elem, None)


@pytest.mark.parametrize("op", sorted(LEGACY))
def test_opset1_forms(op):
    opset, attrs = UNARY[op]
    ours = same_as_onnx(model(op, [("x", F, ["N", 3])], {**attrs, "consumed_inputs": [0]}, opset=1))
    assert dims_str(ours["y0"][1]) == ["N", 3]


@pytest.mark.parametrize("op", AXIS_OPS)
@pytest.mark.parametrize("opset", [1, 11, 13])
@pytest.mark.parametrize("axis", [None, 0, 2, -3])
def test_softmax_family_keeps_shape(op, opset, axis):
    attrs = {} if axis is None else {"axis": axis}
    ours = same_as_onnx(model(op, [("x", F, ["N", "S", 5])], attrs, opset=opset))
    assert ours["y0"][0] == F and dims_str(ours["y0"][1]) == ["N", "S", 5]


@pytest.mark.parametrize("op", AXIS_OPS)
@pytest.mark.parametrize("opset, axis", [(13, 3), (13, -4), (11, 3), (1, -4)])
def test_softmax_family_axis_out_of_range(op, opset, axis):
    with pytest.raises(InvalidGraph, match="axis"):
        infer(op, [("x", F, ["N", "S", 5])], {"axis": axis}, opset=opset)
    # unknown rank: nothing to check
    assert infer(op, [("x", F, None)], {"axis": axis}, opset=opset) == (F, None)


def test_softmax_default_axis_depends_on_opset():
    # opset 1-12 default axis 1: a 1-D input fails; opset 13 default -1: fine
    with pytest.raises(InvalidGraph, match="axis"):
        infer("Softmax", [("x", F, [4])], opset=12)
    assert infer("Softmax", [("x", F, [4])], opset=13) == (F, [4])


@pytest.mark.parametrize(
    "opset, slope",
    [(7, ["C", 1, 1]), (7, [1]), (7, []), (9, ["W"]), (16, [1, "C", 1, 1]), (6, ["C"]), (1, ["C"])],
)
def test_prelu_takes_x_shape(opset, slope):
    m = model("PRelu", [("x", F, ["N", "C", "H", "W"]), ("s", F, slope)], opset=opset)
    ours = same_as_onnx(m)
    assert ours["y0"][0] == F and dims_str(ours["y0"][1]) == ["N", "C", "H", "W"]


def test_prelu_slope_fills_in_and_must_fit():
    x = ("x", F, ["N", None, 4])
    assert dims_str(infer("PRelu", [x, ("s", F, [5, 1])], opset=16)[1]) == ["N", 5, 4]
    with pytest.raises(InvalidGraph, match="PRelu"):
        infer("PRelu", [x, ("s", F, [3])], opset=16)
    with pytest.raises(InvalidGraph, match="PRelu"):
        infer("PRelu", [x, ("s", F, [2, 1, 1, 1])], opset=16)
    # opsets 1 and 6: a per-channel slope of X's axis 1, whatever the rank
    assert dims_str(infer("PRelu", [("x", F, ["N", 3, 4, 4]), ("s", F, [3])], opset=6)[1]) == ["N", 3, 4, 4]


@pytest.mark.parametrize("elem", [F, H, BF, D])
def test_swiglu_same_shape(elem):
    elem_, dims = infer("SwiGLU", [("a", elem, ["N", "S", 8]), ("b", elem, ["N", "S", 8])], opset=28)
    assert elem_ == elem and dims_str(dims) == ["N", "S", 8]
    same_as_onnx(model("SwiGLU", [("a", elem, ["N", 8]), ("b", elem, ["N", 8])], {"alpha": 1.7}, opset=28))


def test_swiglu_merges_the_two_shapes():
    # A and B must have identical shapes (no broadcasting): each knows part of it
    a, b = ("a", F, ["N", None, 8]), ("b", F, [None, 16, None])
    assert dims_str(infer("SwiGLU", [a, b], opset=28)[1]) == ["N", 16, 8]
    elem, dims = infer("SwiGLU", [("a", F, None), ("b", F, ["N", 4])], opset=28)
    assert elem == F and dims_str(dims) == ["N", 4]
    with pytest.raises(InvalidGraph, match="SwiGLU"):
        infer("SwiGLU", [("a", F, ["N", 8]), ("b", F, ["N", 4])], opset=28)
    with pytest.raises(InvalidGraph, match="SwiGLU"):
        infer("SwiGLU", [("a", F, ["N", 8]), ("b", F, [8])], opset=28)


def test_node_suite_cases():
    cases = suite_cases("activation")
    assert len(cases) > 60
    failures = []
    for case in cases:
        try:
            check_case(case)
        except Exception as e:  # noqa: BLE001 - collected and reported together
            failures.append(f"{case.name}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures)
