"""The nn shape rules agree with what the kernels produce."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.ir.dtypes import from_numpy
from tests.conformance.harness import run_model
from tests.ops.nn._util import make_model

rng = np.random.default_rng(5)


def _r(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


I64 = np.int64
CASES = [
    ("Conv", {"x": _r(1, 3, 9, 10), "w": _r(4, 3, 3, 2)}, dict(strides=[2, 3], pads=[1, 0, 1, 1]), 11, 1, ()),
    (
        "Conv",
        {"x": _r(1, 4, 9, 9), "w": _r(4, 1, 3, 3)},
        dict(group=4, auto_pad="SAME_UPPER", strides=[2, 2]),
        11,
        1,
        (),
    ),
    (
        "ConvTranspose",
        {"x": _r(1, 2, 3, 4), "w": _r(2, 3, 3, 3)},
        dict(strides=[2, 2], output_padding=[1, 0]),
        11,
        1,
        (),
    ),
    (
        "ConvTranspose",
        {"x": _r(1, 2, 3, 4), "w": _r(2, 3, 3, 3)},
        dict(strides=[2, 2], output_shape=[7, 8]),
        11,
        1,
        (),
    ),
    (
        "ConvInteger",
        {"x": np.ones((1, 1, 4, 4), np.uint8), "w": np.ones((2, 1, 2, 2), np.uint8)},
        {},
        10,
        1,
        (),
    ),
    ("MaxPool", {"x": _r(1, 2, 9, 8)}, dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), 12, 2, ()),
    (
        "AveragePool",
        {"x": _r(1, 2, 9, 8)},
        dict(kernel_shape=[2, 3], auto_pad="SAME_LOWER", strides=[2, 2]),
        11,
        1,
        (),
    ),
    ("LpPool", {"x": _r(1, 2, 5, 5)}, dict(kernel_shape=[2, 2]), 11, 1, ()),
    ("GlobalAveragePool", {"x": _r(2, 3, 4, 5)}, {}, 1, 1, ()),
    (
        "BatchNormalization",
        {"x": _r(2, 3, 4), "s": _r(3), "b": _r(3), "m": _r(3), "v": np.ones(3, np.float32)},
        dict(training_mode=1),
        15,
        3,
        (),
    ),
    ("LayerNormalization", {"x": _r(2, 3, 4), "s": _r(3, 4), "b": _r(3, 4)}, dict(axis=1), 17, 3, ()),
    ("Dropout", {"x": _r(2, 3)}, {}, 13, 2, ()),
    (
        "Resize",
        {"x": _r(1, 2, 4, 6), "roi": np.zeros(0, np.float32), "s": np.array([1, 1, 1.5, 0.5], np.float32)},
        dict(mode="linear"),
        13,
        1,
        ("roi", "s"),
    ),
    (
        "Resize",
        {"x": _r(1, 2, 4, 6), "roi": None, "sc": None, "sz": np.array([7, 7], I64)},
        dict(axes=[2, 3], keep_aspect_ratio_policy="not_larger"),
        18,
        1,
        ("sz",),
    ),
    ("Upsample", {"x": _r(1, 1, 2, 3), "s": np.array([1, 1, 2, 2], np.float32)}, {}, 9, 1, ("s",)),
    (
        "Attention",
        {
            "q": _r(1, 4, 3, 8),
            "k": _r(1, 2, 5, 8),
            "v": _r(1, 2, 5, 6),
            "m": None,
            "pk": _r(1, 2, 2, 8),
            "pv": _r(1, 2, 2, 6),
        },
        {},
        23,
        4,
        (),
    ),
    (
        "Attention",
        {"q": _r(1, 3, 16), "k": _r(1, 5, 8), "v": _r(1, 5, 12)},
        dict(q_num_heads=4, kv_num_heads=2),
        23,
        1,
        (),
    ),
    (
        "RoiAlign",
        {"x": _r(1, 2, 8, 8), "r": np.array([[0, 0, 4, 4]], np.float32), "b": np.zeros(1, I64)},
        dict(output_height=2, output_width=3),
        16,
        1,
        (),
    ),
    ("GridSample", {"x": _r(1, 2, 4, 4), "g": np.zeros((1, 3, 5, 2), np.float32)}, {}, 16, 1, ()),
    ("AffineGrid", {"t": _r(2, 2, 3), "s": np.array([2, 1, 3, 4], I64)}, {}, 20, 1, ("s",)),
    (
        "Col2Im",
        {"x": _r(1, 8, 6), "i": np.array([4, 6], I64), "b": np.array([2, 2], I64)},
        dict(strides=[2, 2]),
        18,
        1,
        ("i", "b"),
    ),
    (
        "SoftmaxCrossEntropyLoss",
        {"x": _r(3, 5, 2), "t": np.zeros((3, 2), I64)},
        dict(reduction="none"),
        13,
        2,
        (),
    ),
    ("NegativeLogLikelihoodLoss", {"x": _r(3, 5), "t": np.zeros(3, I64)}, {}, 13, 1, ()),
    ("CausalConvWithState", {"x": _r(1, 2, 5), "w": _r(2, 1, 3)}, {}, 27, 2, ()),
    (
        "MaxUnpool",
        {"x": _r(1, 1, 2, 2), "i": np.array([[[[0, 3], [9, 15]]]], I64)},
        dict(kernel_shape=[2, 2], strides=[2, 2]),
        11,
        1,
        (),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_shape_rule_matches_kernel(case):
    op, inputs, attrs, opset, n_out, const = case
    inits = {k: inputs[k] for k in const if inputs[k] is not None}
    model = make_model(op, inputs, attrs, opset=opset, n_outputs=n_out, initializers=inits)
    feeds = [v for k, v in inputs.items() if v is not None and k not in inits]
    outs = run_model(model, feeds)
    m = onyx.load(model.SerializeToString())
    onyx.infer_shapes(m)
    node = m.graph.nodes[0]
    for got, v in zip(outs, node.outputs):
        t = v.type
        assert t is not None and t.shape is not None, f"{op}: no inferred type for {v.name}"
        assert list(t.shape.dims) == list(got.shape), (op, v.name, t.shape.dims, got.shape)
        assert t.elem_type == int(from_numpy(got.dtype)), (op, v.name, t.elem_type, got.dtype)


def test_symbolic_dims_survive_same_padding():
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    w = numpy_helper.from_array(np.zeros((8, 3, 3, 3), np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "w"], ["d"], strides=[2, 2]),
    ]
    g = helper.make_graph(
        nodes, "g", [x], [onnx.ValueInfoProto(name="c"), onnx.ValueInfoProto(name="d")], [w]
    )
    m = onyx.load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    onyx.infer_shapes(m)
    c, d = (n.outputs[0].type.shape.dims for n in m.graph.nodes)
    assert [str(v) for v in c] == ["N", "8", "H", "W"]
    assert str(d[0]) == "N" and d[1] == 8
