"""Shape rules of the linalg family (MatMul, MatMulInteger, Gemm, Einsum, Det), against onnx's
inference, numpy's own shapes and the node suite."""

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

F, H, I8, U8, I32 = T.FLOAT, T.FLOAT16, T.INT8, T.UINT8, T.INT32


def test_every_op_of_the_family_is_covered():
    assert family_ops("linalg") == {"MatMul", "MatMulInteger", "Gemm", "Einsum", "Det"}


# ---------------------------------------------------------------------------------------------
# MatMul


@pytest.mark.parametrize(
    "a, b, want",
    [
        (["M", "K"], ["K", "N"], ["M", "N"]),
        (["B", "M", 4], [4, 5], ["B", "M", 5]),
        (["B", 1, "S", 4], [7, 4, 5], ["B", 7, "S", 5]),
        ([4], ["B", 4, 5], ["B", 5]),
        (["B", "S", 4], [4], ["B", "S"]),
        (["K"], ["K"], []),
        ([2, 3, 4], [2, 4, "N"], [2, 3, "N"]),
        (["B", "M", "K"], ["B", "K", "N"], ["B", "M", "N"]),
        ([None, 3, 4], [1, 4, 6], [None, 3, 6]),
        ([0, 3], [3, 2], [0, 2]),
    ],
)
@pytest.mark.parametrize("elem", [F, H, T.INT64])
def test_matmul(a, b, want, elem):
    ours = same_as_onnx(model("MatMul", [("a", elem, a), ("b", elem, b)], opset=13))
    assert ours["y0"][0] == elem and dims_str(ours["y0"][1]) == want


def test_matmul_batch_dims_broadcast_like_numpy():
    for sa, sb in [
        ((2, 1, 3, 4), (5, 4, 6)),
        ((1, 3, 4), (4,)),
        ((4,), (2, 2, 4, 1)),
        ((3, 4), (7, 1, 4, 2)),
    ]:
        want = list(np.matmul(np.zeros(sa), np.zeros(sb)).shape)
        assert infer("MatMul", [("a", F, list(sa)), ("b", F, list(sb))]) == (F, want)


@pytest.mark.parametrize(
    "a, b", [([3, 4], [5, 6]), ([2, 3, 4], [3, 4, 5]), ([], [3]), ([4], []), (["N", 3], [4])]
)
def test_matmul_mismatch_fails(a, b):
    with pytest.raises(InvalidGraph, match="MatMul"):
        infer("MatMul", [("a", F, a), ("b", F, b)])


def test_matmul_unknown_rank():
    assert infer("MatMul", [("a", F, None), ("b", F, [3, 4])]) == (F, None)


@pytest.mark.parametrize("ta, tb", [(U8, U8), (U8, I8), (I8, U8), (I8, I8)])
def test_matmul_integer_is_int32(ta, tb):
    ours = same_as_onnx(model("MatMulInteger", [("a", ta, ["B", "M", 4]), ("b", tb, [4, 3])], opset=10))
    assert ours["y0"][0] == I32 and dims_str(ours["y0"][1]) == ["B", "M", 3]
    # with zero points (per-tensor and per-row/column)
    inputs = [("a", ta, ["M", 4]), ("b", tb, [4, 3]), ("az", ta, ["M"]), ("bz", tb, [3])]
    ours = same_as_onnx(model("MatMulInteger", inputs, opset=10))
    assert ours["y0"] == (I32, ours["y0"][1]) and dims_str(ours["y0"][1]) == ["M", 3]
    assert infer("MatMulInteger", [("a", ta, [4]), ("b", tb, [4])], opset=10) == (I32, [])


# ---------------------------------------------------------------------------------------------
# Gemm


@pytest.mark.parametrize("ta", [0, 1])
@pytest.mark.parametrize("tb", [0, 1])
@pytest.mark.parametrize("opset", [7, 9, 11, 13])
def test_gemm_transposes(ta, tb, opset):
    a = ["K", "M"] if ta else ["M", "K"]
    b = ["N", "K"] if tb else ["K", "N"]
    attrs = {"transA": ta, "transB": tb, "alpha": 2.0}
    ours = same_as_onnx(model("Gemm", [("a", F, a), ("b", F, b), ("c", F, ["N"])], attrs, opset=opset))
    assert ours["y0"][0] == F and dims_str(ours["y0"][1]) == ["M", "N"]


def test_gemm_without_c_and_legacy_forms():
    ours = same_as_onnx(model("Gemm", [("a", F, [3, 5]), ("b", F, [5, 4])], opset=11))
    assert ours["y0"] == (F, [3, 4])
    m = model(
        "Gemm", [("a", F, [3, 5]), ("b", F, [4, 5]), ("c", F, [4])], {"transB": 1, "broadcast": 1}, opset=6
    )
    assert same_as_onnx(m)["y0"] == (F, [3, 4])
    m = model("Gemm", [("a", F, ["M", 5]), ("b", F, [5, 4]), ("c", F, ["M", 4])], opset=1)
    assert dims_str(onyx_types(m)["y0"][1]) == ["M", 4]


def test_gemm_static_c_fills_in_m_and_n():
    elem, dims = infer("Gemm", [("a", F, [None, 5]), ("b", F, [5, None]), ("c", F, [3, 4])])
    assert (elem, dims) == (F, [3, 4])
    elem, dims = infer("Gemm", [("a", F, [None, 5]), ("b", F, [5, None]), ("c", F, [1, "N"])])
    # unknown input dims get fresh names (unk__k); nothing here pins them to 1 or N
    assert all(d is None or str(d).startswith("unk__") for d in dims) and len(dims) == 2
    elem, dims = infer("Gemm", [("a", F, None), ("b", F, [5, "N"])])
    assert dims_str(dims) == [None, "N"]


@pytest.mark.parametrize(
    "a, b, c, attrs",
    [
        ([3, 5], [6, 4], None, {}),
        ([3, 5], [5, 4], None, {"transA": 1}),
        ([3, 5, 1], [5, 4], None, {}),
        ([3, 5], [5], None, {}),
        ([3, 5], [5, 4], [2, 4], {}),
        ([3, 5], [5, 4], [5], {}),
        ([3, 5], [5, 4], [1, 3, 4], {}),
    ],
)
def test_gemm_mismatch_fails(a, b, c, attrs):
    inputs = [("a", F, a), ("b", F, b)] + ([("c", F, c)] if c is not None else [])
    with pytest.raises(InvalidGraph, match="Gemm"):
        infer("Gemm", inputs, attrs)


# ---------------------------------------------------------------------------------------------
# Einsum


@pytest.mark.parametrize(
    "eq, shapes, want",
    [
        ("ij,jk->ik", [["M", "K"], ["K", "N"]], ["M", "N"]),
        ("ij,jk", [["M", "K"], ["K", "N"]], ["M", "N"]),
        ("bij,bjk->bik", [["B", 3, 4], ["B", 4, 5]], ["B", 3, 5]),
        ("ij->ji", [["M", "N"]], ["N", "M"]),
        ("ii->i", [["N", "N"]], ["N"]),
        ("ii", [[3, 3]], []),
        ("i,i", [["N"], ["N"]], []),
        ("i,j->ij", [["M"], ["N"]], ["M", "N"]),
        ("...ij,...jk->...ik", [["B", "H", 3, 4], ["B", "H", 4, 5]], ["B", "H", 3, 5]),
        ("...ij,jk", [["B", 2, 3, 4], [4, 5]], ["B", 2, 3, 5]),
        ("bhqd,bhkd->bhqk", [["B", "H", "S", 64], ["B", "H", "T", 64]], ["B", "H", "S", "T"]),
        ("ab , bc -> ca", [[2, 3], [3, 4]], [4, 2]),
        ("Ab,bC->CA", [[2, 3], [3, 4]], [4, 2]),
        ("ij->", [["M", "N"]], []),
    ],
)
def test_einsum(eq, shapes, want):
    inputs = [(f"x{i}", F, s) for i, s in enumerate(shapes)]
    ours = same_as_onnx(model("Einsum", inputs, {"equation": eq}, opset=12))
    assert ours["y0"][0] == F and dims_str(ours["y0"][1]) == want


@pytest.mark.parametrize(
    "eq, shapes",
    [
        ("a...b->ba...", [(2, 3, 4, 5)]),
        ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 6)]),
        ("i...,i...->i...", [(2, 3), (2, 3)]),
        ("ij,ij->ij", [(2, 3), (1, 3)]),
        ("...,...->...", [(), (3,)]),
        ("bij,bjk", [(2, 3, 4), (2, 4, 5)]),
        ("b...i,i->b...", [(2, 3, 4, 5), (5,)]),
    ],
)
def test_einsum_matches_numpy(eq, shapes):
    from onyx.ops.linalg.einsum import explicit

    want = list(np.einsum(explicit(eq, len(shapes)), *[np.zeros(s) for s in shapes]).shape)
    inputs = [(f"x{i}", F, list(s)) for i, s in enumerate(shapes)]
    assert infer("Einsum", inputs, {"equation": eq}, opset=12) == (F, want)


def test_einsum_unknown_ranks():
    # an operand of unknown rank without ellipsis still has one dim per label
    assert dims_str(infer("Einsum", [("a", F, None), ("b", F, [4, "N"])], {"equation": "ij,jk->ik"})[1]) == [
        None,
        "N",
    ]
    # with an ellipsis the output rank is unknown
    assert infer("Einsum", [("a", F, None)], {"equation": "...i->i..."}) == (F, None)
    assert infer("Einsum", [("a", T.INT64, None)], {"equation": "...i->i"}) == (T.INT64, [None])


@pytest.mark.parametrize(
    "eq, shapes",
    [
        ("ij,jk->ik", [[2, 3], [4, 5]]),
        ("ij->i", [[2, 3, 4]]),
        ("ij->k", [[2, 3]]),
        ("ii->i", [[2, 3]]),
        ("ij,jk->ik", [[2, 3]]),
        ("...ij->ij", [[5, 2, 3]]),
        ("ijk...->i", [[2, 3]]),
        ("i1->i", [[2, 3]]),
    ],
)
def test_einsum_bad_fails(eq, shapes):
    inputs = [(f"x{i}", F, s) for i, s in enumerate(shapes)]
    with pytest.raises(InvalidGraph, match="Einsum"):
        infer("Einsum", inputs, {"equation": eq}, opset=12)


# ---------------------------------------------------------------------------------------------
# Det


@pytest.mark.parametrize(
    "dims, want",
    [(["N", 3, 3], ["N"]), ([3, 3], []), (["B", "C", "M", "M"], ["B", "C"]), ([2, None, 4], [2])],
)
def test_det(dims, want):
    ours = same_as_onnx(model("Det", [("x", F, dims)], opset=11))
    assert ours["y0"][0] == F and dims_str(ours["y0"][1]) == want


@pytest.mark.parametrize("dims", [[3], [2, 3], [5, 2, 4]])
def test_det_needs_square_matrices(dims):
    with pytest.raises(InvalidGraph, match="Det"):
        infer("Det", [("x", F, dims)], opset=11)


def test_node_suite_cases():
    cases = suite_cases("linalg")
    assert len(cases) > 25
    failures = []
    for case in cases:
        try:
            check_case(case)
        except Exception as e:  # noqa: BLE001 - collected and reported together
            failures.append(f"{case.name}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures)


# ---------------------------------------------------------------------------------------------
# properties: on random shapes the rules agree with numpy (static dims), and with named dims they
# never fail where numpy succeeds nor claim a static dim numpy would not give

dims_st = st.lists(st.integers(1, 3), min_size=0, max_size=4)


def _named(shape, i, mask):
    return [f"d{i}_{k}" if m else d for k, (d, m) in enumerate(zip(shape, mask))]


def _compare(op, shapes, attrs, numpy_fn, masks):
    try:
        want = list(numpy_fn(*[np.zeros(s, dtype=np.float32) for s in shapes]).shape)
    except ValueError:
        want = None
    inputs = [(f"x{i}", F, list(s)) for i, s in enumerate(shapes)]
    if want is None:
        with pytest.raises(InvalidGraph):
            infer(op, inputs, attrs)
    else:
        assert infer(op, inputs, attrs) == (F, want)
        named = [(f"x{i}", F, _named(s, i, m)) for i, (s, m) in enumerate(zip(shapes, masks))]
        elem, dims = infer(op, named, attrs)
        assert elem == F and dims is not None and len(dims) == len(want)
        assert all(not isinstance(d, int) or d == w for d, w in zip(dims, want)), (dims, want)


@settings(max_examples=60, deadline=None)
@given(
    a=dims_st,
    b=dims_st,
    ma=st.lists(st.booleans(), min_size=4, max_size=4),
    mb=st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_matmul_property(a, b, ma, mb):
    if not a or not b:
        return
    _compare("MatMul", [a, b], None, np.matmul, [ma, mb])


EQUATIONS = [
    "ij,jk->ik", "ij,jk", "bij,bjk->bik", "...ij,...jk->...ik", "ii->i", "i,i", "ij->", "...i,i->...",
    "a...b->ba...", "ij,ij->ij", "ab,bc,cd->ad", "...,...->...", "bhqd,bhkd->bhqk",
]  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(
    eq=st.sampled_from(EQUATIONS),
    shapes=st.lists(dims_st, min_size=3, max_size=3),
    masks=st.lists(st.lists(st.booleans(), min_size=4, max_size=4), min_size=3, max_size=3),
)
def test_einsum_property(eq, shapes, masks):
    from onyx.ops.linalg.einsum import explicit

    n = eq.split("->")[0].count(",") + 1
    full = explicit(eq, n)
    terms = full.split("->")[0].split(",")
    # one dim per label (as many as the term needs; a few extra under an ellipsis)
    shapes = [
        s[: len(t.replace("...", ""))] + ([] if "..." not in t else s[len(t.replace("...", "")) :])
        if len(s) >= len(t.replace("...", ""))
        else s + [2] * (len(t.replace("...", "")) - len(s))
        for s, t in zip(shapes[:n], terms)
    ]
    _compare("Einsum", shapes, {"equation": eq}, lambda *xs: np.einsum(full, *xs), masks[:n])


C_SHAPES = [None, [], [1], ["n"], ["m", 1], [1, "n"], ["m", "n"], [3]]


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 3), k=st.integers(1, 3), k2=st.integers(1, 3), n=st.integers(1, 3),
    ta=st.booleans(), tb=st.booleans(), c=st.sampled_from(C_SHAPES),
)  # fmt: skip
def test_gemm_property(m, k, k2, n, ta, tb, c):
    a = [k, m] if ta else [m, k]
    b = [n, k2] if tb else [k2, n]
    shapes = [a, b] + ([] if c is None else [[{"m": m, "n": n}.get(d, d) for d in c]])

    def ref(x, y, z=None):
        r = (x.T if ta else x) @ (y.T if tb else y)
        if z is not None:
            if np.broadcast_shapes(r.shape, z.shape) != r.shape:
                raise ValueError("C does not broadcast unidirectionally")
            r = r + z
        return r

    _compare(
        "Gemm", shapes, {"transA": int(ta), "transB": int(tb)}, ref, [[False] * 2, [True] * 2, [True] * 2]
    )
