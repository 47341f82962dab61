"""Shape rules of the tensor family (src/onyx/ops/tensor): against onnx's own inference, the node
suite, symbolic arithmetic (Reshape 0/-1, Concat sums, Flatten products...) and the real exports."""

from __future__ import annotations

import glob
import os

import numpy as np
import onnx
import onnx.helper as oh
import pytest
from onnx import TensorProto as T

import onyx
from onyx.errors import InvalidGraph
from onyx.ir.symbolic import Sym
from onyx.ops import registry
from tests.shape_inference._tensor_rules import (
    check_case,
    dims_str,
    family_ops,
    graph_model,
    model,
    onnx_types,
    onyx_types,
    same_as_onnx,
    suite_cases,
)

F, I64, I32, B = T.FLOAT, T.INT64, T.INT32, T.BOOL
TENSOR_OPS = family_ops("tensor")
MAX = np.iinfo(np.int64).max


def i64(*v):
    return np.array(v, dtype=np.int64)


def anon(dims):
    """dims as ints/str/None with fresh symbols (unk__N) written '?'."""
    if dims is None:
        return None
    return ["?" if isinstance(d, str) and d.startswith("unk__") else d for d in dims_str(dims)]


def out(m, name="y0"):
    """(elem, dims as ints/str/None, fresh symbols '?') of one output, after checking against onnx."""
    elem, dims = same_as_onnx(m)[name]
    return elem, anon(dims)


def test_every_op_has_a_rule():
    assert TENSOR_OPS >= {"Reshape", "Expand", "Slice", "Split", "Squeeze", "Unique", "TensorScatter"}
    missing = sorted(op for op in TENSOR_OPS if registry.get_shape_rule(op) is None)
    assert not missing


# ---------------------------------------------------------------------------------------------
# the node suite


def _suite_ids():
    return [c.name for c in suite_cases() if {n.op_type for n in c.model.graph.node} & TENSOR_OPS]


@pytest.fixture(scope="module")
def cases():
    return {c.name: c for c in suite_cases()}


@pytest.mark.parametrize("name", _suite_ids())
def test_node_suite_case(name, cases):
    check_case(cases[name])


@pytest.mark.parametrize("name", _suite_ids()[::7])
def test_node_suite_agrees_with_onnx(name, cases):
    from tests.shape_inference._tensor_rules import _variant

    c = cases[name]
    for params, symbolic in ((False, False), (True, False), (True, True)):
        m, _ = _variant(c.model, list(c.data_sets[0][0]), params, symbolic)
        same_as_onnx(m)


# ---------------------------------------------------------------------------------------------
# Reshape


def test_reshape_heads_and_back():
    """[batch, seq, 768] -> [0, 0, 12, 64] -> [-1, 768]: the -1 is total // known product."""
    m = graph_model(
        [
            oh.make_node("Reshape", ["x", "s1"], ["h"]),
            oh.make_node("Reshape", ["h", "s2"], ["y"]),
        ],
        [("x", F, ["batch", "seq", 768])],
        ["h", "y"],
        {"s1": i64(0, 0, 12, 64), "s2": i64(-1, 768)},
    )
    got = same_as_onnx(m)
    assert dims_str(got["h"][1]) == ["batch", "seq", 12, 64]
    assert dims_str(got["y"][1]) == ["batch*seq", 768]


def test_reshape_minus_one_with_symbolic_rest():
    m = model("Reshape", [("x", F, ["batch", "seq", 768]), ("s", I64, [3])], inits={"s": i64(0, -1, 64)})
    assert out(m)[1] == ["batch", "12*seq", 64]


def test_reshape_minus_one_cancels_unknown_dims():
    m = model("Reshape", [("x", F, ["N", None, 4, 16]), ("s", I64, [3])], inits={"s": i64(0, 0, -1)})
    # the unknown dim is copied by the 0, so -1 = 4*16 without knowing it
    n, unknown, last = out(m)[1]
    assert (n, last) == ("N", 64) and unknown in (None, "?")  # the unknown input dim stays unknown


def test_reshape_shape_chain_from_shape_gather_unsqueeze_concat():
    """The torch.onnx pattern: Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    nodes = [
        oh.make_node("Shape", ["x"], ["shp"]),
        oh.make_node("Gather", ["shp", "zero"], ["b"], axis=0),
        oh.make_node("Gather", ["shp", "one"], ["s"], axis=0),
        oh.make_node("Unsqueeze", ["b", "ax0"], ["bu"]),
        oh.make_node("Unsqueeze", ["s", "ax0"], ["su"]),
        oh.make_node("Concat", ["bu", "su", "heads", "hd"], ["target"], axis=0),
        oh.make_node("Reshape", ["x", "target"], ["y"]),
        oh.make_node("Transpose", ["y"], ["t"], perm=[0, 2, 1, 3]),
        oh.make_node("Mul", ["b", "s"], ["bs"]),
        oh.make_node("Unsqueeze", ["bs", "ax0"], ["bsu"]),
        oh.make_node("Concat", ["bsu", "width"], ["flat"], axis=0),
        oh.make_node("Reshape", ["t", "flat"], ["z"]),
    ]
    inits = {
        "zero": np.array(0, np.int64),
        "one": np.array(1, np.int64),
        "ax0": i64(0),
        "heads": i64(12),
        "hd": i64(-1),
        "width": i64(-1),
    }
    m = graph_model(nodes, [("x", F, ["batch", "seq", 768])], ["y", "t", "z"], inits)
    got = onyx_types(m)
    assert dims_str(got["y"][1]) == ["batch", "seq", 12, 64]
    assert dims_str(got["t"][1]) == ["batch", 12, "seq", 64]
    assert dims_str(got["z"][1]) == ["batch*seq", 768]
    assert got["target"][0] == I64 and dims_str(got["target"][1]) == [4]


def test_reshape_allowzero():
    m = model("Reshape", [("x", F, [0, 3, 4]), ("s", I64, [3])], {"allowzero": 1}, inits={"s": i64(3, 0, 4)})
    assert out(m)[1] == [3, 0, 4]
    m = model("Reshape", [("x", F, ["N", 3]), ("s", I64, [2])], inits={"s": i64(3, 0)})
    assert out(m)[1] == [3, 3]


def test_reshape_unknown_shape_value_keeps_rank():
    m = model("Reshape", [("x", F, ["N", 6]), ("s", I64, [3])])
    assert out(m)[1] == ["?", "?", "?"]


def test_reshape_opset_1_attribute():
    m = model("Reshape", [("x", F, ["N", 2, 3])], {"shape": [0, -1]}, opset=1)
    assert dims_str(onyx_types(m)["y0"][1]) == ["N", 6]


def test_reshape_bad_static_shape_fails_in_strict_mode():
    m = model("Reshape", [("x", F, [2, 3]), ("s", I64, [1])], inits={"s": i64(5)})
    with pytest.raises(InvalidGraph):
        onyx_types(m)
    m = model("Reshape", [("x", F, [2, 3]), ("s", I64, [2])], inits={"s": i64(4, -1)})
    with pytest.raises(InvalidGraph):
        onyx_types(m)


# ---------------------------------------------------------------------------------------------
# Expand, Tile, Concat, Gather


def test_expand_from_value_broadcasts_symbolic_dims():
    m = model("Expand", [("x", F, ["N", 1, 4]), ("s", I64, [3])], inits={"s": i64(1, 3, 1)})
    assert out(m)[1] == ["N", 3, 4]
    m = model("Expand", [("x", F, [4]), ("s", I64, [3])], inits={"s": i64(2, 1, 1)})
    assert out(m)[1] == [2, 1, 4]


def test_expand_to_a_computed_symbolic_shape():
    nodes = [oh.make_node("Shape", ["like"], ["s"]), oh.make_node("Expand", ["x", "s"], ["y"])]
    m = graph_model(nodes, [("x", F, [1, 1, 64]), ("like", F, ["batch", "seq", 1])], ["y"])
    assert dims_str(onyx_types(m)["y"][1]) == ["batch", "seq", 64]


def test_expand_unknown_value_keeps_certain_dims():
    m = model("Expand", [("x", F, [1, 5, 1]), ("s", I64, [4])])
    assert out(m)[1] == ["?", "?", 5, "?"]


def test_expand_static_mismatch_fails():
    m = model("Expand", [("x", F, [3, 4]), ("s", I64, [2])], inits={"s": i64(2, 4)})
    with pytest.raises(InvalidGraph):
        onyx_types(m)


def test_tile_multiplies_dims():
    m = model("Tile", [("x", F, ["N", 3]), ("r", I64, [2])], inits={"r": i64(2, 1)})
    assert out(m)[1] == ["2*N", 3]
    m = model("Tile", [("x", F, ["N", 3]), ("r", I64, [2])])
    assert out(m)[1] == ["?", "?"]


def test_tile_opset_1():
    m = model(
        "Tile",
        [("x", F, [2, 3]), ("t", I64, []), ("a", I64, [])],
        opset=1,
        inits={"t": np.array(3, np.int64), "a": np.array(1, np.int64)},
    )
    assert dims_str(onyx_types(m)["y0"][1]) == [2, 9]


def test_concat_adds_symbolic_dims():
    m = model("Concat", [("a", F, ["N", "a"]), ("b", F, ["N", "b"])], {"axis": 1})
    assert out(m)[1] == ["N", "a+b"]
    m = model("Concat", [("a", F, ["N", 2]), ("b", F, [None, 3]), ("c", F, ["N", 1])], {"axis": -1})
    assert out(m)[1] == ["N", 6]


def test_concat_mismatch_fails():
    m = model("Concat", [("a", F, [2, 3]), ("b", F, [4, 3])], {"axis": 1})
    with pytest.raises(InvalidGraph):
        onyx_types(m)


def test_concat_opset_1_default_axis():
    m = model("Concat", [("a", F, [2, 3]), ("b", F, [2, 5])], opset=1)
    assert dims_str(onyx_types(m)["y0"][1]) == [2, 8]


def test_concat_mixed_symbolic_and_constant_values():
    """int64 constants next to symbolic dims: the value stays known (the kernel refuses mixed types)."""
    nodes = [
        oh.make_node("Shape", ["x"], ["s"]),
        oh.make_node("Slice", ["s", "st", "en"], ["tail"]),
        oh.make_node("Concat", ["m1", "tail"], ["target"], axis=0),
        oh.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    inits = {"st": i64(2), "en": i64(MAX), "m1": i64(-1)}
    m = graph_model(nodes, [("x", F, ["batch", 4, "seq", 16])], ["y"], inits)
    assert dims_str(onyx_types(m)["y"][1]) == ["4*batch", "seq", 16]


@pytest.mark.parametrize(
    ("data", "idx", "axis", "want"),
    [
        (["N", "seq", 64], [2, 3], 1, ["N", 2, 3, 64]),
        (["N", "seq", 64], [], 0, ["seq", 64]),
        (["N", "seq", 64], ["k"], -1, ["N", "seq", "k"]),
    ],
)
def test_gather_rank(data, idx, axis, want):
    m = model("Gather", [("x", F, data), ("i", I64, idx)], {"axis": axis})
    assert out(m) == (F, want)


def test_gather_elements_and_nd_and_scatter():
    m = model("GatherElements", [("x", F, ["N", 5]), ("i", I64, ["N", 2])], {"axis": 1})
    assert out(m) == (F, ["N", 2])
    m = model("GatherND", [("x", F, ["N", 4, 5, 6]), ("i", I64, ["N", 7, 2])], {"batch_dims": 1})
    assert out(m) == (F, ["N", 7, 6])
    m = model("GatherND", [("x", F, [4, 5, 6]), ("i", I64, ["k", 3])], opset=11)
    assert out(m) == (F, ["k"])
    for op in ("ScatterND", "ScatterElements"):
        m = model(op, [("x", F, ["N", 5]), ("i", I64, ["k", 1]), ("u", F, ["k", 5])])
        if op == "ScatterElements":
            m = model(op, [("x", F, ["N", 5]), ("i", I64, ["k", 2]), ("u", F, ["k", 2])])
        assert out(m) == (F, ["N", 5])
    m = model("Scatter", [("x", F, ["N", 5]), ("i", I64, [1, 2]), ("u", F, [1, 2])], opset=9)
    assert out(m) == (F, ["N", 5])


def test_tensor_scatter():
    m = model(
        "TensorScatter",
        [("c", F, ["B", "H", 32, 8]), ("u", F, ["B", "H", "s", 8]), ("w", I64, ["B"])],
        opset=24,
    )
    assert dims_str(onyx_types(m)["y0"][1]) == ["B", "H", 32, 8]


# ---------------------------------------------------------------------------------------------
# Slice


@pytest.mark.parametrize(
    ("dims", "starts", "ends", "axes", "steps", "want"),
    [
        (["N", "seq", 8], [1], [MAX], [1], None, ["N", "seq-1", 8]),
        (["N", "seq", 8], [0], [-1], [1], None, ["N", "seq-1", 8]),
        (["N", "seq", 8], [-3], [MAX], [-2], None, ["N", 3, 8]),
        (["N", "seq", 8], [0, 2], [MAX, 6], [1, 2], [1, 2], ["N", "seq", 2]),
        (["N", 10, 8], [MAX], [-MAX], [1], [-1], ["N", 10, 8]),
        (["N", 10, 8], [-1], [-MAX], [1], [-3], ["N", 4, 8]),
        (["N", 10, 8], [20], [30], [1], None, ["N", 0, 8]),
        (["N", "seq", 8], [0], [4], [1], None, ["N", "?", 8]),  # min(4, seq)
    ],
)
def test_slice(dims, starts, ends, axes, steps, want):
    ins = [("x", F, dims), ("s", I64, [len(starts)]), ("e", I64, [len(ends)]), ("a", I64, [len(axes)])]
    inits = {"s": i64(*starts), "e": i64(*ends), "a": i64(*axes)}
    if steps is not None:
        ins.append(("t", I64, [len(steps)]))
        inits["t"] = i64(*steps)
    assert out(model("Slice", ins, inits=inits)) == (F, want)


def test_slice_symbolic_bounds_from_shape():
    """GPT-2's causal mask: bias[:, :, k-q:k, :k] over a static [1, 1, 64, 64] buffer."""
    nodes = [
        oh.make_node("Shape", ["q"], ["qs"]),
        oh.make_node("Shape", ["k"], ["ks"]),
        oh.make_node("Slice", ["qs", "two", "three"], ["ql"]),
        oh.make_node("Slice", ["ks", "two", "three"], ["kl"]),
        oh.make_node("Sub", ["kl", "ql"], ["start"]),
        oh.make_node("Slice", ["bias", "start", "kl", "two"], ["rows"]),
        oh.make_node("Slice", ["rows", "zero", "kl", "three"], ["y"]),
    ]
    inits = {"two": i64(2), "three": i64(3), "zero": i64(0), "bias": np.ones((1, 1, 64, 64), np.float32)}
    m = graph_model(nodes, [("q", F, ["B", 4, "q", 16]), ("k", F, ["B", 4, "k", 16])], ["y"], inits)
    assert dims_str(onyx_types(m)["y"][1]) == [1, 1, "q", "k"]


def test_slice_unknown_values():
    m = model(
        "Slice", [("x", F, ["N", 5]), ("s", I64, [1]), ("e", I64, [1]), ("a", I64, [1])], inits={"a": i64(1)}
    )
    assert out(m)[1] == ["N", "?"]
    m = model("Slice", [("x", F, ["N", 5]), ("s", I64, [1]), ("e", I64, [1])])
    assert out(m)[1] == ["?", "?"]


def test_slice_opset_1_attributes():
    m = model("Slice", [("x", F, ["N", 10])], {"starts": [2], "ends": [MAX], "axes": [1]}, opset=1)
    assert dims_str(onyx_types(m)["y0"][1]) == ["N", 8]


# ---------------------------------------------------------------------------------------------
# Split, Squeeze, Unsqueeze, Transpose, Flatten


@pytest.mark.parametrize(
    ("opset", "attrs", "split", "n", "want"),
    [
        (1, {"axis": 1, "split": [2, 4]}, None, 2, [2, 4]),
        (1, {"axis": 1}, [1, 5], 2, [1, 5]),
        (2, {"axis": 1}, None, 3, [2, 2, 2]),
        (11, {"axis": -1, "split": [3, 3]}, None, 2, [3, 3]),
        (13, {"axis": 1}, [4, 2], 2, [4, 2]),
        (13, {"axis": 1}, None, 2, [3, 3]),
        (18, {"axis": 1, "num_outputs": 4}, None, 4, [2, 2, 2, 0]),
        (18, {"axis": 1}, [5, 1], 2, [5, 1]),
    ],
)
def test_split_versions(opset, attrs, split, n, want):
    ins = [("x", F, ["N", 6])]
    inits = {}
    if split is not None:
        ins.append(("s", I64, [len(split)]))
        inits["s"] = i64(*split)
    m = model("Split", ins, attrs, opset=opset, n_out=n, inits=inits)
    got = onyx_types(m) if opset == 1 else same_as_onnx(m)
    assert [dims_str(got[f"y{k}"][1]) for k in range(n)] == [["N", w] for w in want]


def test_split_symbolic_equal_parts():
    m = model("Split", [("x", F, ["N", "2*seq"])], {"axis": 1}, opset=13, n_out=2)
    got = onyx_types(m)
    assert dims_str(got["y0"][1]) == dims_str(got["y1"][1]) == ["N", "seq"]
    m = model("Split", [("x", F, ["N", "3*seq"])], {"axis": 1, "num_outputs": 3}, opset=18, n_out=3)
    assert dims_str(onyx_types(m)["y2"][1]) == ["N", "seq"]


def test_split_bad_sizes_fail():
    m = model(
        "Split", [("x", F, [2, 6]), ("s", I64, [2])], {"axis": 1}, opset=13, n_out=2, inits={"s": i64(2, 2)}
    )
    with pytest.raises(InvalidGraph):
        onyx_types(m)


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_squeeze_unsqueeze_attribute_or_input(opset):
    if opset < 13:
        sq = model("Squeeze", [("x", F, ["N", 1, "seq", 1])], {"axes": [1, -1]}, opset=opset)
        un = model("Unsqueeze", [("x", F, ["N", "seq"])], {"axes": [0, -1]}, opset=opset)
    else:
        sq = model(
            "Squeeze", [("x", F, ["N", 1, "seq", 1]), ("a", I64, [2])], opset=opset, inits={"a": i64(1, -1)}
        )
        un = model(
            "Unsqueeze", [("x", F, ["N", "seq"]), ("a", I64, [2])], opset=opset, inits={"a": i64(0, -1)}
        )
    assert out(sq)[1] == ["N", "seq"]
    assert out(un)[1] == [1, "N", "seq", 1]


def test_squeeze_without_axes():
    assert out(model("Squeeze", [("x", F, [1, 3, 1, 2])]))[1] == [3, 2]
    assert out(model("Squeeze", [("x", F, ["N", 1, 3])]))[1] is None  # N may be 1


def test_squeeze_unknown_axes_value_keeps_rank():
    m = model("Squeeze", [("x", F, ["N", 1, 3]), ("a", I64, [1])])
    assert out(m)[1] == ["?", "?"]
    m = model("Unsqueeze", [("x", F, ["N", 3]), ("a", I64, [2])])
    assert out(m)[1] == ["?", "?", "?", "?"]


def test_squeeze_non_one_axis_fails():
    m = model("Squeeze", [("x", F, [2, 3]), ("a", I64, [1])], inits={"a": i64(0)})
    with pytest.raises(InvalidGraph):
        onyx_types(m)


def test_transpose_and_flatten():
    assert out(model("Transpose", [("x", F, ["N", "C", 5])]))[1] == [5, "C", "N"]
    m = model("Transpose", [("x", F, ["N", "C", 5])], {"perm": [0, 2, 1]})
    assert out(m)[1] == ["N", 5, "C"]
    assert out(model("Flatten", [("x", F, ["N", "C", "H", "W"])]))[1] == ["N", "C*H*W"]
    m = model("Flatten", [("x", F, ["N", 3, 4, 5])], {"axis": -1})
    assert out(m)[1] == ["12*N", 5]
    assert out(model("Flatten", [("x", F, ["N", 3])], {"axis": 0}))[1] == [1, "3*N"]
    assert out(model("Flatten", [("x", F, None)]))[1] == [None, None]


# ---------------------------------------------------------------------------------------------
# types: Cast, CastLike, Constant, ConstantOfShape, EyeLike, Identity


def test_cast_and_castlike():
    m = model("Cast", [("x", F, ["N", 3])], {"to": T.FLOAT16})
    assert out(m) == (T.FLOAT16, ["N", 3])
    m = model("Cast", [("x", F, ["N"])], {"to": "INT32"}, opset=1)
    assert onyx_types(m)["y0"][0] == I32
    m = model("CastLike", [("x", F, ["N", 3]), ("t", T.BFLOAT16, [])])
    assert out(m) == (T.BFLOAT16, ["N", 3])


def test_constant_attributes():
    for attrs, want in [
        ({"value_ints": [1, 2, 3]}, (I64, [3])),
        ({"value_float": 1.5}, (F, [])),
        ({"value_strings": ["a", "b"]}, (T.STRING, [2])),
        ({"value": oh.make_tensor("v", T.INT32, [2, 2], [1, 2, 3, 4])}, (I32, [2, 2])),
    ]:
        assert out(model("Constant", [], attrs)) == want


def test_constant_of_shape():
    m = model("ConstantOfShape", [("s", I64, [2])], inits={"s": i64(2, 3)})
    assert out(m) == (F, [2, 3])
    value = oh.make_tensor("v", I64, [1], [7])
    m = model("ConstantOfShape", [("s", I64, [3])], {"value": value})
    assert out(m) == (I64, ["?", "?", "?"])
    nodes = [oh.make_node("Shape", ["x"], ["s"]), oh.make_node("ConstantOfShape", ["s"], ["y"], value=value)]
    m = graph_model(nodes, [("x", F, ["batch", "seq"])], ["y"])
    assert onyx_types(m)["y"] == (I64, [Sym.named("batch"), Sym.named("seq")])


def test_eye_like_and_identity():
    assert out(model("EyeLike", [("x", F, ["N", "M"])], {"dtype": I32})) == (I32, ["N", "M"])
    assert out(model("Identity", [("x", B, ["N", 2])])) == (B, ["N", 2])
    seq = oh.make_tensor_sequence_value_info("s", F, ["N"])
    g = oh.make_graph(
        [oh.make_node("Identity", ["s"], ["y"])], "g", [seq], [oh.make_empty_tensor_value_info("y")]
    )
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", 21)], ir_version=10)
    om = onyx.load(m.SerializeToString())
    onyx.infer_shapes(om, strict=True)
    assert "Sequence" in type(om.graph.outputs[0].type).__name__


# ---------------------------------------------------------------------------------------------
# Range, Pad, Shape, Size


def test_range_lengths():
    m = model("Range", [("a", I64, []), ("b", I64, []), ("c", I64, [])])
    elem, dims = onyx_types(m)["y0"]
    assert elem == I64 and len(dims) == 1 and str(dims[0]).startswith("unk__")
    nodes = [
        oh.make_node("Shape", ["x"], ["s"]),
        oh.make_node("Gather", ["s", "one"], ["n"], axis=0),
        oh.make_node("Range", ["zero", "n", "step"], ["y"]),
        oh.make_node("Range", ["n", "zero", "neg"], ["z"]),
        oh.make_node("Range", ["zero", "n", "two"], ["w"]),
    ]
    inits = {
        "one": np.array(1, np.int64),
        "zero": np.array(0, np.int64),
        "step": np.array(1, np.int64),
        "neg": np.array(-1, np.int64),
        "two": np.array(2, np.int64),
    }
    got = onyx_types(graph_model(nodes, [("x", F, ["batch", "seq"])], ["y", "z", "w"], inits))
    assert got["y"] == (I64, [Sym.named("seq")])
    assert got["z"] == (I64, [Sym.named("seq")])
    assert dims_str(got["w"][1]) == ["(seq+1)//(2)"]


def test_range_float_values():
    m = model(
        "Range",
        [("a", F, []), ("b", F, []), ("c", F, [])],
        inits={"b": np.array(1.0, np.float32), "c": np.array(0.3, np.float32)},
    )
    elem, dims = onyx_types(m)["y0"]
    assert elem == F and len(dims) == 1


@pytest.mark.parametrize("opset", [2, 11, 18, 21])
def test_pad_versions(opset):
    if opset < 11:
        m = model("Pad", [("x", F, ["N", 3, 4])], {"pads": [0, 1, 2, 0, 1, 2]}, opset=opset)
        assert out(m) == (F, ["N", 5, 8])
        return
    m = model(
        "Pad", [("x", F, ["N", 3, 4]), ("p", I64, [6])], opset=opset, inits={"p": i64(1, 1, -1, 1, 0, 0)}
    )
    assert out(m) == (F, ["N+2", 4, 3])
    if opset >= 18:
        m = model(
            "Pad",
            [("x", F, ["N", 3, 4]), ("p", I64, [2]), ("", F, None), ("a", I64, [1])],
            opset=opset,
            inits={"p": i64(2, 3), "a": i64(-1)},
        )
        assert out(m) == (F, ["N", 3, 9])
    m = model("Pad", [("x", F, ["N", 3, 4]), ("p", I64, [6])], opset=opset)
    assert out(m) == (F, ["?", "?", "?"])


def test_shape_and_size():
    m = model("Shape", [("x", F, ["N", 3, None])], {"start": 1}, opset=15)
    elem, dims = onyx_types(m)["y0"]
    assert elem == I64 and dims == [2]
    assert out(model("Shape", [("x", F, None)])) == (I64, [None])
    assert out(model("Size", [("x", F, ["N", 3])])) == (I64, [])


def test_shape_of_a_symbolic_value():
    """Shape of a shape vector computed from symbols (the driver leaves Shape to the rule there)."""
    nodes = [
        oh.make_node("Shape", ["x"], ["s"]),
        oh.make_node("Shape", ["s"], ["ss"]),
        oh.make_node("ConstantOfShape", ["ss"], ["ones"], value=oh.make_tensor("v", I64, [1], [1])),
        oh.make_node("Size", ["s"], ["n"]),
    ]
    got = onyx_types(graph_model(nodes, [("x", F, ["batch", "seq", 4])], ["ones", "n"]))
    assert got["ones"] == (I64, [3])
    assert got["n"] == (I64, [])


# ---------------------------------------------------------------------------------------------
# data-dependent dims and value-dependent ones


def test_non_zero_unique_compress_get_fresh_symbols():
    elem, dims = onyx_types(model("NonZero", [("x", F, ["N", 3])]))["y0"]
    assert elem == I64 and dims[0] == 2 and str(dims[1]).startswith("unk__")
    got = onyx_types(model("Unique", [("x", F, ["N", 3])], {"axis": 1}, n_out=4))
    u = got["y0"][1][1]
    assert str(u).startswith("unk__")
    assert got["y0"][1][0] == Sym.named("N")
    assert got["y1"] == (I64, [u]) and got["y3"] == (I64, [u]) and got["y2"] == (I64, [3])
    got = onyx_types(model("Unique", [("x", I32, ["N", 3])], n_out=4))
    assert got["y0"][0] == I32 and dims_str(got["y2"][1]) == ["3*N"]
    elem, dims = onyx_types(model("Compress", [("x", F, ["N", 3]), ("c", B, ["k"])], {"axis": 0}))["y0"]
    assert dims[1] == 3 and str(dims[0]).startswith("unk__")
    m = model(
        "Compress", [("x", F, ["N", 3]), ("c", B, [3])], {"axis": 1}, inits={"c": np.array([1, 0, 1], bool)}
    )
    assert out(m) == (F, ["N", 2])


def test_top_k():
    m = model("TopK", [("x", F, ["N", 10]), ("k", I64, [1])], n_out=2, inits={"k": i64(3)})
    got = same_as_onnx(m)
    assert got["y0"] == (F, [Sym.named("N"), 3]) and got["y1"] == (I64, [Sym.named("N"), 3])
    m = model("TopK", [("x", F, ["N", 10])], {"k": 2, "axis": 0}, opset=1, n_out=2)
    assert dims_str(onyx_types(m)["y1"][1]) == [2, 10]
    got = onyx_types(model("TopK", [("x", F, ["N", 10]), ("k", I64, [1])], n_out=2))
    assert got["y0"][1][1] == got["y1"][1][1] and str(got["y0"][1][1]).startswith("unk__")
    m = model("TopK", [("x", F, [2, 3]), ("k", I64, [1])], n_out=2, inits={"k": i64(5)})
    with pytest.raises(InvalidGraph):
        onyx_types(m)


def test_one_hot():
    m = model(
        "OneHot",
        [("i", I64, ["N", "seq"]), ("d", I64, []), ("v", F, [2])],
        {"axis": 1},
        inits={"d": np.array(10, np.int64)},
    )
    assert out(m) == (F, ["N", 10, "seq"])
    m = model("OneHot", [("i", I64, ["N"]), ("d", F, [1]), ("v", I32, [2])])
    assert out(m) == (I32, ["N", "?"])


def test_depth_space_reverse_trilu_center_crop():
    assert out(model("DepthToSpace", [("x", F, ["N", 8, "H", 3])], {"blocksize": 2}))[1] == ["N", 2, "2*H", 6]
    assert out(model("SpaceToDepth", [("x", F, ["N", "C", 4, 6])], {"blocksize": 2}))[1] == ["N", "4*C", 2, 3]
    m = model("ReverseSequence", [("x", F, ["T", "B", 3]), ("l", I64, ["B"])])
    assert out(m)[1] == ["T", "B", 3]
    assert out(model("Trilu", [("x", F, ["N", 3, 4])]))[1] == ["N", 3, 4]
    m = model(
        "CenterCropPad", [("x", F, ["N", 10, 7]), ("s", I64, [2])], {"axes": [1, 2]}, inits={"s": i64(5, 9)}
    )
    assert out(m)[1] == ["N", 5, 9]
    with pytest.raises(InvalidGraph):
        onyx_types(model("DepthToSpace", [("x", F, [1, 6, 2, 2])], {"blocksize": 2}))


# ---------------------------------------------------------------------------------------------
# the real exports (made by tests/models; skipped when the cache is empty)

MODELS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", ".cache", "models", "*.onnx")))
TORCH = [p for p in MODELS if any(k in os.path.basename(p) for k in ("bert", "gpt2", "vit"))]


@pytest.mark.parametrize("path", TORCH, ids=[os.path.basename(p) for p in TORCH])
def test_real_exports_agree_with_onnx(path):
    """Every static dim onnx infers for an output of a tensor/reduce op, onyx infers the same."""
    mine = family_ops("tensor", "reduce")
    theirs = onnx_types_loose(path)
    m = onyx.load(path)
    onyx.infer_shapes(m)
    checked = 0
    for node in m.graph.walk():
        if node.op_type not in mine:
            continue
        for v in node.outputs:
            if v.name not in theirs or theirs[v.name][1] is None:
                continue
            dims = v.type.shape.dims
            assert len(dims) == len(theirs[v.name][1]), (v.name, dims, theirs[v.name])
            for a, b in zip(dims, theirs[v.name][1]):
                if isinstance(b, int):
                    assert a == b, (node.op_type, v.name, dims, theirs[v.name])
            checked += 1
    assert checked


def onnx_types_loose(path):
    m = onnx.load(path, load_external_data=False)
    inferred = onnx.shape_inference.infer_shapes(m)
    out = {}
    for vi in inferred.graph.value_info:
        tt = vi.type.tensor_type
        dims = (
            None
            if not tt.HasField("shape")
            else [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        )
        out[vi.name] = (tt.elem_type, dims)
    return out


@pytest.mark.parametrize("path", [p for p in TORCH if "dynamo" in p], ids=os.path.basename)
def test_dynamo_exports_fully_known(path):
    m = onyx.load(path)
    onyx.infer_shapes(m)
    known, total = onyx.shape_inference.known_fraction(m)
    assert known == total


def test_onnx_types_helper_sees_outputs():
    m = model("Transpose", [("x", F, [2, 3])])
    assert onnx_types(m)["y0"] == (F, [3, 2])


def test_rules_never_crash_on_odd_inputs():
    from tests.shape_inference._tensor_rules import fuzz

    assert fuzz(600, seed=1) == []


@pytest.mark.parametrize("path", TORCH, ids=[os.path.basename(p) for p in TORCH])
def test_real_exports_match_run_time_shapes(path):
    """The symbolic dims of tensor/reduce outputs, evaluated at the fed sizes, are the shapes
    onnxruntime produces (every intermediate made a graph output)."""
    import onnxruntime as ort

    from onyx.ir.symbolic import parse_dim
    from onyx.ir.types import TensorType
    from tests.shape_inference._tensor_rules import evaluate

    mine = family_ops("tensor", "reduce")
    m = onyx.load(path)
    onyx.infer_shapes(m)
    inferred = {}
    for node in m.graph.walk():
        for v in node.outputs:
            if node.op_type in mine and isinstance(v.type, TensorType) and v.type.shape is not None:
                inferred[v.name] = [parse_dim(d) if isinstance(d, str) else d for d in v.type.shape.dims]
    om = onnx.load(path)
    listed = {o.name for o in om.graph.output}
    om.graph.output.extend(onnx.ValueInfoProto(name=n) for n in inferred if n not in listed)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(om.SerializeToString(), so, providers=["CPUExecutionProvider"])
    env: dict[str, int] = {}
    feeds = {}
    for i in sess.get_inputs():
        shape = []
        for d in i.shape:
            if isinstance(d, str):
                env.setdefault(d, 3 if "batch" in d else 6)
                d = env[d]
            shape.append(d)
        feeds[i.name] = np.ones(shape, np.int64 if "int64" in i.type else np.float32)
    names = [o.name for o in sess.get_outputs()]
    checked = 0
    for name, val in zip(names, sess.run(None, feeds)):
        if name not in inferred:
            continue
        dims = inferred[name]
        assert len(dims) == val.ndim, (name, dims, val.shape)
        for d, n in zip(dims, val.shape):
            v = evaluate(d, env)
            assert v is None or v == n, (name, dims_str(dims), val.shape, env)
        checked += 1
    assert checked > 10


def test_split_of_a_symbolic_shape_vector_keeps_values():
    nodes = [
        oh.make_node("Shape", ["x"], ["s"]),
        oh.make_node("Split", ["s", "sizes"], ["lead", "tail"], axis=0),
        oh.make_node("Concat", ["lead", "m1"], ["target"], axis=0),
        oh.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    inits = {"sizes": i64(2, 2), "m1": i64(-1)}
    m = graph_model(nodes, [("x", F, ["batch", "seq", 4, 16])], ["y"], inits, opset=13)
    assert dims_str(onyx_types(m)["y"][1]) == ["batch", "seq", 64]
