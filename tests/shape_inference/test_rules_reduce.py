"""Shape rules of the reduce family (src/onyx/ops/reduce): keepdims, axes as attribute or input,
noop_with_empty_axes, ArgMax/ArgMin; against onnx's own inference and the node suite."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import InvalidGraph
from onyx.ops import registry
from tests.shape_inference._tensor_rules import (
    check_case,
    dims_str,
    family_ops,
    model,
    onyx_types,
    same_as_onnx,
    suite_cases,
)

F, I64, I32 = T.FLOAT, T.INT64, T.INT32
REDUCE_OPS = family_ops("reduce")
REDUCES = sorted(op for op in REDUCE_OPS if op.startswith("Reduce"))
#: the opset where each Reduce op's axes became an input
AXES_INPUT = {op: 13 if op == "ReduceSum" else 18 for op in REDUCES}


def test_every_op_has_a_rule():
    assert len(REDUCES) == 10 and {"ArgMax", "ArgMin"} <= REDUCE_OPS
    assert not [op for op in REDUCE_OPS if registry.get_shape_rule(op) is None]


def _reduce(op, dims, axes, keepdims=None, noop=None, elem=F, old=False, known=True):
    attrs = {}
    if keepdims is not None:
        attrs["keepdims"] = keepdims
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    if old:
        if axes is not None:
            attrs["axes"] = axes
        return model(op, [("x", elem, dims)], attrs, opset=AXES_INPUT[op] - 1)
    ins = [("x", elem, dims)]
    inits = {}
    if axes is not None:
        ins.append(("a", I64, [len(axes)]))
        if known:
            inits["a"] = np.array(axes, dtype=np.int64)
    return model(op, ins, attrs, opset=max(AXES_INPUT[op], 18), inits=inits)


@pytest.mark.parametrize("op", REDUCES)
@pytest.mark.parametrize("old", [False, True], ids=["axes-input", "axes-attr"])
@pytest.mark.parametrize(
    ("axes", "keepdims", "want"),
    [
        ([1], None, ["N", 1, 5]),
        ([1], 0, ["N", 5]),
        ([-1, 0], 1, [1, "seq", 1]),
        ([-1, 0], 0, ["seq"]),
        (None, 1, [1, 1, 1]),
        (None, 0, []),
    ],
)
def test_reduce_axes_and_keepdims(op, old, axes, keepdims, want):
    ours = same_as_onnx(_reduce(op, ["N", "seq", 5], axes, keepdims, old=old))
    assert ours["y0"][0] == F and dims_str(ours["y0"][1]) == want


@pytest.mark.parametrize("op", REDUCES)
def test_noop_with_empty_axes(op):
    ours = same_as_onnx(_reduce(op, ["N", "seq", 5], None, 0, noop=1))
    assert dims_str(ours["y0"][1]) == ["N", "seq", 5]
    ours = same_as_onnx(_reduce(op, ["N", "seq", 5], [], 1, noop=1))
    assert dims_str(ours["y0"][1]) == ["N", "seq", 5]
    ours = same_as_onnx(_reduce(op, ["N", "seq", 5], [], 0, noop=0))
    assert dims_str(ours["y0"][1]) == []


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax"])
def test_reduce_unknown_axes_value(op):
    ours = onyx_types(_reduce(op, ["N", "seq", 5], [0, 1], 1, known=False))
    assert [str(d)[:5] for d in ours["y0"][1]] == ["unk__"] * 3  # fixed by the axes at run time
    ours = onyx_types(_reduce(op, ["N", "seq", 5], [0, 1], 0, known=False))
    assert [str(d)[:5] for d in ours["y0"][1]] == ["unk__"]


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceProd", "ReduceMin"])
@pytest.mark.parametrize("elem", [I32, I64, T.FLOAT16, T.DOUBLE])
def test_reduce_keeps_element_type(op, elem):
    ours = same_as_onnx(_reduce(op, ["N", 4], [1], 0, elem=elem))
    assert ours["y0"][0] == elem


def test_reduce_unknown_rank_and_scalar():
    assert onyx_types(_reduce("ReduceSum", None, [0], 1))["y0"][1] is None
    assert dims_str(same_as_onnx(_reduce("ReduceSum", [], None, 1))["y0"][1]) == []


def test_reduce_bad_axis_fails():
    with pytest.raises(InvalidGraph):
        onyx_types(_reduce("ReduceMean", ["N", 3], [2], 1))
    with pytest.raises(InvalidGraph):
        onyx_types(_reduce("ReduceMean", ["N", 3], [1, -1], 1, old=True))


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize(
    ("attrs", "want"),
    [({}, [1, "seq", 5]), ({"axis": -1, "keepdims": 0}, ["N", "seq"]), ({"axis": 1}, ["N", 1, 5])],
)
def test_arg_max_min(op, opset, attrs, want):
    if opset >= 12:
        attrs = {**attrs, "select_last_index": 1}
    ours = same_as_onnx(model(op, [("x", F, ["N", "seq", 5])], attrs, opset=opset))
    assert ours["y0"] == (I64, ours["y0"][1]) and dims_str(ours["y0"][1]) == want


def test_arg_max_bad_axis_fails():
    with pytest.raises(InvalidGraph):
        onyx_types(model("ArgMax", [("x", F, ["N", 3])], {"axis": 2}))


def _suite_ids():
    return [c.name for c in suite_cases() if {n.op_type for n in c.model.graph.node} & REDUCE_OPS]


@pytest.fixture(scope="module")
def cases():
    return {c.name: c for c in suite_cases()}


@pytest.mark.parametrize("name", _suite_ids())
def test_node_suite_case(name, cases):
    check_case(cases[name])


def test_reduce_prod_of_a_symbolic_shape_gives_numel():
    import onnx.helper as oh

    from tests.shape_inference._tensor_rules import graph_model

    nodes = [
        oh.make_node("Shape", ["x"], ["s"]),
        oh.make_node("ReduceProd", ["s"], ["n"], keepdims=1),
        oh.make_node("ReduceSum", ["s", "zero"], ["t"], keepdims=0),
        oh.make_node("Reshape", ["x", "n"], ["y"]),
        oh.make_node("Unsqueeze", ["t", "zero"], ["tu"]),
        oh.make_node("ConstantOfShape", ["tu"], ["z"]),
    ]
    inits = {"zero": np.array([0], np.int64)}
    got = onyx_types(graph_model(nodes, [("x", F, ["batch", "seq", 4])], ["y", "z"], inits, opset=18))
    assert dims_str(got["y"][1]) == ["4*batch*seq"]
    assert dims_str(got["z"][1]) == ["batch+seq+4"]
