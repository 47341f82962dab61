"""Shape rules of the math family (src/onyx/ops/math), against onnx's inference and the node suite."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto as T

from onyx.errors import InvalidGraph
from tests.shape_inference._oprules import (
    check_case,
    dims_str,
    family_ops,
    infer,
    model,
    onyx_types,
    same_as_onnx,
    suite_cases,
)

F, B, I32, I64, U8 = T.FLOAT, T.BOOL, T.INT32, T.INT64, T.UINT8

UNARY = {
    "Abs": F, "Acos": F, "Acosh": F, "Asin": F, "Asinh": F, "Atan": F, "Atanh": F, "Ceil": F, "Cos": F,
    "Cosh": F, "Erf": F, "Exp": F, "Floor": F, "Log": F, "Neg": F, "Reciprocal": F, "Round": F,
    "Sign": F, "Sin": F, "Sinh": F, "Sqrt": F, "Tan": F, "BitwiseNot": I32, "Not": B, "Clip": F,
}  # fmt: skip
BINARY = {
    "Add": F, "Sub": F, "Mul": F, "Div": F, "Pow": F, "Mod": I32, "BitShift": U8, "BitwiseAnd": I32,
    "BitwiseOr": I32, "BitwiseXor": I32,
}  # fmt: skip
COMPARE = {
    "Equal": F, "Greater": F, "Less": F, "GreaterOrEqual": F, "LessOrEqual": F, "And": B, "Or": B, "Xor": B,
}  # fmt: skip
VARIADIC = ["Max", "Min", "Sum", "Mean"]
ATTRS = {"BitShift": {"direction": "LEFT"}}


def test_every_op_of_the_family_is_covered():
    covered = set(UNARY) | set(BINARY) | set(COMPARE) | set(VARIADIC)
    covered |= {"Where", "CumSum", "CumProd", "BitCast", "IsNaN", "IsInf"}
    assert family_ops("math") == covered


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dims", [["N", "seq", 3], [], None, [0, "N"]])
def test_unary_keeps_type_and_shape(op, dims):
    ours = same_as_onnx(model(op, [("x", UNARY[op], dims)]))
    assert ours["y0"][0] == UNARY[op]
    assert dims_str(ours["y0"][1]) == dims


@pytest.mark.parametrize("op", ["IsNaN", "IsInf"])
@pytest.mark.parametrize("elem", [F, T.FLOAT16, T.DOUBLE])
def test_isnan_isinf_are_bool(op, elem):
    ours = same_as_onnx(model(op, [("x", elem, ["N", 5])]))
    assert ours["y0"] == (B, ours["y0"][1]) and dims_str(ours["y0"][1]) == ["N", 5]


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcasts(op):
    m = model(op, [("a", BINARY[op], ["N", 1, 4]), ("b", BINARY[op], ["seq", 1])], ATTRS.get(op))
    ours = same_as_onnx(m)
    assert ours["y0"][0] == BINARY[op]
    assert dims_str(ours["y0"][1]) == ["N", "seq", 4]


@pytest.mark.parametrize("op", sorted(COMPARE))
def test_comparisons_are_bool_and_broadcast(op):
    ours = same_as_onnx(model(op, [("a", COMPARE[op], [2, "N", 1]), ("b", COMPARE[op], ["C"])]))
    assert ours["y0"][0] == B
    assert dims_str(ours["y0"][1]) == [2, "N", "C"]


@pytest.mark.parametrize(
    "a, b, want",
    [
        (["N"], [1], ["N"]),
        (["N"], [5], [5]),
        (["N", 1], [1, "N"], ["N", "N"]),
        (["N"], ["N"], ["N"]),
        # two different symbols: at run time they are equal (or one is 1); like onnxruntime's symbolic
        # inference, keep the first rather than lose the dim
        (["N"], ["M"], ["N"]),
        ([None, 3], [4, 1], [4, 3]),
        ([], ["N", 2], ["N", 2]),
        ([0, 3], [1, 3], [0, 3]),
    ],
)
def test_broadcast_of_named_dims(a, b, want):
    elem, dims = infer("Add", [("a", F, a), ("b", F, b)])
    assert elem == F and dims_str(dims) == want


def test_unknown_rank_gives_unknown_rank():
    assert infer("Add", [("a", F, None), ("b", F, [3])]) == (F, None)
    assert infer("Less", [("a", F, ["N"]), ("b", F, None)]) == (B, None)


def test_static_mismatch_fails_in_strict_mode_only():
    m = model("Mul", [("a", F, [2, 3]), ("b", F, [4, 3])])
    with pytest.raises(InvalidGraph, match="Mul"):
        onyx_types(m)
    assert onyx_types(m, strict=False)["y0"][1] is None


@pytest.mark.parametrize("op, elem", [("Add", F), ("Sub", F), ("Mul", I32), ("Div", F), ("Pow", F)])
def test_legacy_broadcast_gives_a_shape(op, elem):
    # opsets < 7: B is broadcast into A at ``axis`` (or A's trailing dims)
    m = model(op, [("a", elem, [2, "C", 4, 5]), ("b", elem, ["C", 4])], {"broadcast": 1, "axis": 1}, opset=6)
    ours = same_as_onnx(m)
    assert ours["y0"][0] == elem and dims_str(ours["y0"][1]) == [2, "C", 4, 5]
    m = model(op, [("a", elem, ["N", 3]), ("b", elem, ["N", 3])], opset=1)
    assert dims_str(same_as_onnx(m)["y0"][1]) == ["N", 3]


@pytest.mark.parametrize("op, elem", [("Equal", I32), ("Greater", F), ("Less", F), ("And", B), ("Or", B)])
def test_legacy_comparisons(op, elem):
    m = model(op, [("a", elem, ["N", 3, 4]), ("b", elem, [4])], {"broadcast": 1}, opset=1)
    ours = same_as_onnx(m)
    assert ours["y0"][0] == B and dims_str(ours["y0"][1]) == ["N", 3, 4]


def test_pow_takes_the_base_type():
    ours = same_as_onnx(model("Pow", [("x", I32, ["N", 3]), ("e", F, [1])], opset=15))
    assert ours["y0"][0] == I32 and dims_str(ours["y0"][1]) == ["N", 3]


@pytest.mark.parametrize("op", VARIADIC)
def test_variadic_broadcast(op):
    m = model(op, [("a", F, ["N", 1]), ("b", F, [1, "C"]), ("c", F, ["C"])], opset=13)
    assert dims_str(same_as_onnx(m)["y0"][1]) == ["N", "C"]
    assert dims_str(same_as_onnx(model(op, [("a", F, ["N", 7])], opset=13))["y0"][1]) == ["N", 7]
    m = model(op, [("a", F, ["N", 7]), ("b", F, ["N", 7])], opset=6)
    assert dims_str(same_as_onnx(m)["y0"][1]) == ["N", 7]
    with pytest.raises(InvalidGraph):
        infer(op, [("a", F, [2]), ("b", F, [3]), ("c", F, [1])], opset=13)


def test_where_broadcasts_three_ways_with_x_type():
    m = model("Where", [("c", B, ["N", 1, 1]), ("x", I64, [1, "S", 1]), ("y", I64, [4])])
    ours = same_as_onnx(m)
    assert ours["y0"][0] == I64 and dims_str(ours["y0"][1]) == ["N", "S", 4]
    with pytest.raises(InvalidGraph):
        infer("Where", [("c", B, [3]), ("x", F, [2]), ("y", F, [1])])


@pytest.mark.parametrize("opset", [1, 6, 11, 13])
def test_clip_versions(opset):
    if opset >= 11:
        inputs = [("x", F, ["N", 3]), ("lo", F, []), ("hi", F, [])]
        attrs = None
    else:
        inputs, attrs = [("x", F, ["N", 3])], {"min": -1.0, "max": 1.0}
    m = model("Clip", inputs, attrs, opset=opset)
    ours = onyx_types(m) if opset == 1 else same_as_onnx(m)
    assert ours["y0"][0] == F and dims_str(ours["y0"][1]) == ["N", 3]
    # an absent min input
    if opset >= 11:
        ours = same_as_onnx(model("Clip", [("x", F, ["N", 3]), ("", F, None), ("hi", F, [])], opset=opset))
        assert dims_str(ours["y0"][1]) == ["N", 3]


@pytest.mark.parametrize("op, opset", [("CumSum", 11), ("CumSum", 14), ("CumProd", 26)])
@pytest.mark.parametrize("axis", [0, -1, 2])
def test_cumulative_keeps_shape_and_checks_axis(op, opset, axis):
    inits = {"axis": np.array(axis, dtype=np.int64)}
    m = model(op, [("x", F, ["N", "S", 3]), ("axis", I64, [])], {"reverse": 1}, opset=opset, inits=inits)
    ours = same_as_onnx(m)
    assert ours["y0"] == (F, ours["y0"][1]) and dims_str(ours["y0"][1]) == ["N", "S", 3]
    bad = model(op, [("x", F, ["N", 3]), ("axis", I64, [])], opset=opset, inits={"axis": np.array(axis + 5)})
    with pytest.raises(InvalidGraph, match="axis"):
        onyx_types(bad)
    # axis unknown at load time: nothing to check
    m = model(op, [("x", I32, ["N", 3]), ("axis", I32, [])], opset=opset)
    assert dims_str(same_as_onnx(m)["y0"][1]) == ["N", 3]


@pytest.mark.parametrize(
    "src, to",
    [(F, I32), (I32, F), (T.FLOAT16, T.BFLOAT16), (U8, T.INT8), (T.DOUBLE, T.UINT64), (U8, B)],
)
def test_bitcast_same_width(src, to):
    ours = same_as_onnx(model("BitCast", [("x", src, ["N", 2, 3])], {"to": to}, opset=26))
    assert ours["y0"][0] == to and dims_str(ours["y0"][1]) == ["N", 2, 3]


@pytest.mark.parametrize("src, to", [(F, T.FLOAT16), (T.INT8, I32), (T.STRING, T.STRING), (F, 999)])
def test_bitcast_rejects_a_size_change(src, to):
    with pytest.raises(InvalidGraph, match="BitCast"):
        infer("BitCast", [("x", src, ["N", 3])], {"to": to}, opset=26)


def test_rules_leave_inputs_of_unknown_type_alone():
    elem, dims = infer("Add", [("a", F, ["N", 3]), ("b", F, None)])
    assert elem == F and dims is None
    assert infer("Where", [("c", B, ["N"]), ("x", F, None), ("y", F, ["N"])]) == (F, None)


def test_node_suite_cases():
    cases = suite_cases("math")
    assert len(cases) > 150
    failures = []
    for case in cases:
        try:
            check_case(case)
        except Exception as e:  # noqa: BLE001 - collected and reported together
            failures.append(f"{case.name}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures)


# properties: random shapes broadcast as numpy does; named dims never contradict numpy's static dims

shape_st = st.lists(st.integers(0, 3), min_size=0, max_size=4)
mask_st = st.lists(st.booleans(), min_size=4, max_size=4)


@settings(max_examples=80, deadline=None)
@given(
    op=st.sampled_from(["Add", "Where", "Max", "Sum", "Greater"]),
    shapes=st.lists(shape_st, min_size=3, max_size=3),
    masks=st.lists(mask_st, min_size=3, max_size=3),
)
def test_broadcast_property(op, shapes, masks):
    n = {"Add": 2, "Greater": 2, "Where": 3}.get(op, len(shapes))
    shapes = shapes[:n]
    elems = [B, F, F] if op == "Where" else [F] * n
    want_elem = B if op == "Greater" else F
    try:
        want = list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        want = None
    inputs = [(f"x{i}", e, s) for i, (e, s) in enumerate(zip(elems, shapes))]
    if want is None:
        with pytest.raises(InvalidGraph, match=op):
            infer(op, inputs, opset=13)
        return
    assert infer(op, inputs, opset=13) == (want_elem, want)
    named = [
        (f"x{i}", e, [f"d{i}_{k}" if m else d for k, (d, m) in enumerate(zip(s, mask))])
        for i, (e, s, mask) in enumerate(zip(elems, shapes, masks))
    ]
    elem, dims = infer(op, named, opset=13)
    assert elem == want_elem and dims is not None and len(dims) == len(want)
    assert all(not isinstance(d, int) or d == w for d, w in zip(dims, want)), (dims, want)
