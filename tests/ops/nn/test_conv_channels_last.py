"""Channels-last convolutions: the layout pass (onyx.optimizer.channels_last_layout) marks a
convolution whose readers are all depthwise convolutions to leave its output channels-last; depthwise
and 1x1 convolutions keep that layout (MobileNet's inverted residual blocks), and everything else reads
it as the NCHW array it is. Results match the numpy paths (ONYX_NO_PERF) and onnxruntime over strides,
kernel sizes, padding, batches, dtypes and activations; outputs handed to the caller are C-contiguous.
The layout pass is tested by running models with and without it."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.ir.builder import GraphBuilder
from onyx.kernels import conv as kernels
from onyx.ops.nn import conv as conv_mod
from onyx.ops.nn.conv import channels_last, conv_forward
from onyx.optimizer.channels_last_layout import mark_channels_last

pytestmark = pytest.mark.skipif(
    not kernels.has_compiled(np.float32), reason="onyx.kernels._conv was not built: no channels-last kernels"
)

ACTS = {
    "": ("", {}),  # no activation: the convolutions stay Conv nodes
    "Relu": ("Relu", {}),
    "Clip": ("Clip", {}),  # min/max inputs added below
    "LeakyRelu": ("LeakyRelu", {"alpha": 0.1}),
    "Sigmoid": ("Sigmoid", {}),  # not a compiled activation: numpy applies it
}


def _block(n, cin, expand, cout, hw, k, stride, pads, act, dtype, residual):
    """An inverted residual block: 1x1 expand, act, depthwise kxk, act, 1x1 project (+ input)."""
    rng = np.random.default_rng(abs(hash((n, cin, expand, cout, hw, k, stride, tuple(pads), act))) % 2**32)
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    inits = [
        numpy_helper.from_array((rng.standard_normal((expand, cin, 1, 1)) / 3).astype(dtype), "w1"),
        numpy_helper.from_array(rng.standard_normal(expand).astype(dtype), "b1"),
        numpy_helper.from_array(rng.standard_normal((expand, 1, k[0], k[1])).astype(dtype), "w2"),
        numpy_helper.from_array(rng.standard_normal(expand).astype(dtype), "b2"),
        numpy_helper.from_array((rng.standard_normal((cout, expand, 1, 1)) / 4).astype(dtype), "w3"),
        numpy_helper.from_array(rng.standard_normal(cout).astype(dtype), "b3"),
        numpy_helper.from_array(np.array(0, dtype), "lo"),
        numpy_helper.from_array(np.array(6, dtype), "hi"),
    ]
    op, attrs = ACTS[act]

    def activation(src, dst):
        if not op:
            return helper.make_node("Identity", [src], [dst])
        extra = ["lo", "hi"] if op == "Clip" else []
        return helper.make_node(op, [src, *extra], [dst], **attrs)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["e"]),
        activation("e", "ea"),
        helper.make_node(
            "Conv",
            ["ea", "w2", "b2"],
            ["d"],
            group=expand,
            kernel_shape=list(k),
            strides=[stride] * 2,
            pads=pads,
        ),
        activation("d", "da"),
        helper.make_node("Conv", ["da", "w3", "b3"], ["p"]),
    ]
    if residual:
        nodes.append(helper.make_node("Add", ["p", "x"], ["y"]))
    else:
        nodes.append(helper.make_node("Identity", ["p"], ["y"]))
    graph = helper.make_graph(
        nodes,
        "block",
        [helper.make_tensor_value_info("x", elem, [n, cin, hw[0], hw[1]])],
        [helper.make_tensor_value_info("y", elem, None)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    x = rng.standard_normal((n, cin, hw[0], hw[1])).astype(dtype)
    return model.SerializeToString(), {"x": x}


CASES = [
    # (batch, cin, expand, cout, (H, W), kernel, stride, pads, residual)
    (1, 8, 24, 8, (12, 12), (3, 3), 1, [1, 1, 1, 1], True),
    (2, 6, 16, 10, (13, 9), (3, 3), 2, [1, 1, 1, 1], False),
    (1, 4, 12, 4, (7, 7), (5, 5), 1, [2, 2, 2, 2], True),
    (1, 5, 20, 7, (9, 10), (3, 3), 2, [0, 1, 1, 0], False),
    (1, 3, 17, 3, (1, 1), (3, 3), 1, [1, 1, 1, 1], True),  # every position an edge
    (3, 4, 8, 6, (2, 5), (1, 3), 1, [0, 1, 0, 1], False),
]


def _spy(monkeypatch):
    """Count the convolutions that ran channels-last."""
    calls = []
    real = channels_last.run

    def spy(*args, **kwargs):
        y = real(*args, **kwargs)
        calls.append(y is not None)
        return y

    monkeypatch.setattr(channels_last, "run", spy)
    return calls


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
@pytest.mark.parametrize("act", list(ACTS))
def test_block_channels_last_matches_numpy_and_onnxruntime(case, act, monkeypatch):
    model, feeds = _block(*case[:8], act, np.float32, case[8])
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    calls = _spy(monkeypatch)
    got = onyx.InferenceSession(model).run(None, feeds)[0]
    # expand (NCHW in), depthwise and project all ran channels-last (on a 1x1 map both layouts coincide)
    assert sum(calls) == 3 or (case[4] == (1, 1) and sum(calls) >= 1)

    monkeypatch.setenv("ONYX_NO_PERF", "1")
    plain = onyx.InferenceSession(model).run(None, feeds)[0]
    assert got.flags.c_contiguous and got.shape == want.shape
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_forward_chain_channels_last(dtype):
    """conv_forward asked for channels-last output (1x1), then fed it (depthwise, 1x1 with Z and an
    activation): the same values as the contiguous NCHW chain, in float32 and float64."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 6, 11, 11)).astype(dtype)
    w1 = rng.standard_normal((16, 6, 1, 1)).astype(dtype)
    w2 = rng.standard_normal((16, 1, 3, 3)).astype(dtype)
    w3 = rng.standard_normal((6, 16, 1, 1)).astype(dtype)
    b = rng.standard_normal(16).astype(dtype)
    one = dict(auto_pad="NOTSET", dilations=None, kernel_shape=None, pads=None, strides=None, group=1)
    dw = dict(one, group=16, pads=[1, 1, 1, 1])
    clip = ("Clip", [0.0, 6.0])

    def post(a):
        return np.clip(a, 0, 6, out=a)

    e = conv_forward(x, w1, b, **one, channels_last=True, act=clip, post=post)
    assert not e.flags.c_contiguous and e.transpose(0, 2, 3, 1).flags.c_contiguous
    d = conv_forward(e, w2, b, **dw, act=clip, post=post)
    assert d.transpose(0, 2, 3, 1).flags.c_contiguous
    y = conv_forward(d, w3, None, **one, z=x, act=clip, post=post)
    e0 = conv_forward(x, w1, b, **one, act=clip, post=post)
    d0 = conv_forward(e0, w2, b, **dw, act=clip, post=post)
    y0 = conv_forward(d0, w3, None, **one, z=x, act=clip, post=post)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for got, want in ((e, e0), (d, d0), (y, y0)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_unoptimized_graph_stays_nchw(monkeypatch):
    """Without fusion the 1x1 convolution feeds an activation, not a depthwise one: no channels-last."""
    model, feeds = _block(1, 8, 24, 8, (12, 12), (3, 3), 1, [1, 1, 1, 1], "Relu", np.float32, True)
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    calls = _spy(monkeypatch)
    got = onyx.InferenceSession(model, so).run(None, feeds)[0]
    assert not any(calls)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _dw_graph(consumer_group, also_output):
    """x -> 1x1 conv -> e -> conv(group) -> y; e also a graph output when ``also_output``."""
    rng = np.random.default_rng(3)
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [1, 4, 6, 6])
    e = b.Conv(x, b.const(rng.standard_normal((8, 4, 1, 1)).astype(np.float32)))
    cg = 8 // consumer_group
    w2 = b.const(rng.standard_normal((8, cg, 3, 3)).astype(np.float32))
    y = b.Conv(e, w2, group=consumer_group, pads=[1, 1, 1, 1])
    b.output(y, "y", np.float32, [1, 8, 6, 6])
    if also_output:
        b.output(e, "e", np.float32, [1, 8, 6, 6])
    return b.model(), rng.standard_normal((1, 4, 6, 6)).astype(np.float32)


def _marked(model):
    return [conv_mod.wants_channels_last(n) for n in model.graph.nodes]


def test_layout_pass_marks_only_convolutions_before_depthwise():
    model, _ = _dw_graph(8, False)
    assert mark_channels_last(model)
    assert _marked(model) == [True, False]  # the second feeds the graph output only
    assert not mark_channels_last(model)  # a fixed point: nothing changes the second time
    assert not conv_mod.wants_channels_last(None)
    grouped, _ = _dw_graph(2, False)  # group 2: not depthwise
    assert not mark_channels_last(grouped) and _marked(grouped) == [False, False]
    shared, _ = _dw_graph(8, True)  # e is also a graph output: handed to the caller, it stays NCHW
    mark_channels_last(shared)
    assert _marked(shared) == [False, False]


@pytest.mark.parametrize("act", ["", "Relu", "Clip"])
def test_layout_pass_changes_layout_not_values(act, monkeypatch):
    """The same model with the layout pass (level 3, the default) and without it (level 2): the same
    outputs, channels-last runs with the pass only."""
    model, feeds = _block(1, 8, 24, 8, (12, 12), (3, 3), 1, [1, 1, 1, 1], act, np.float32, True)
    calls = _spy(monkeypatch)
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    before = onyx.InferenceSession(model, so).run(None, feeds)[0]
    assert not any(calls)
    after = onyx.InferenceSession(model).run(None, feeds)[0]
    assert sum(calls) == 3
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def test_channels_last_graph_output_is_contiguous():
    model, x = _dw_graph(8, True)
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    y, e = onyx.InferenceSession(model, so).run(None, {"x": x})
    assert e.flags.c_contiguous and y.flags.c_contiguous
    attrs = dict(auto_pad="NOTSET", dilations=None, kernel_shape=None, strides=None)
    w1 = model.graph.nodes[0].inputs[1].const.numpy()
    w2 = model.graph.nodes[1].inputs[1].const.numpy()
    e_want = conv_forward(x, w1, None, group=1, pads=None, **attrs)
    np.testing.assert_allclose(e, e_want, rtol=1e-5, atol=1e-5)
    y_want = conv_forward(e_want, w2, None, group=8, pads=[1, 1, 1, 1], **attrs)
    np.testing.assert_allclose(y, y_want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("hw", [(1, 1), (2, 3), (5, 4), (9, 9)])
@pytest.mark.parametrize(
    "kernel,stride,pads", [((3, 3), (1, 1), (1, 1, 1, 1)), ((3, 3), (3, 2), (0, 2, 1, 0))]
)
def test_depthwise_on_a_channels_last_input(hw, kernel, stride, pads):
    """conv_forward given a channels-last view computes what it computes on the contiguous array."""
    rng = np.random.default_rng(5)
    c = 19
    x = rng.standard_normal((2, c) + hw).astype(np.float32)
    w = rng.standard_normal((c, 1) + kernel).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    attrs = dict(auto_pad="NOTSET", dilations=None, group=c, kernel_shape=None, pads=pads, strides=stride)
    want = conv_forward(x, w, b, **attrs)
    xcl = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    got = conv_forward(xcl, w, b, **attrs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _cl_input(rng, shape, dtype=np.float32):
    """An NCHW view of a C-contiguous NHWC array (as channels-last outputs are)."""
    n, c, h, w = shape
    return rng.standard_normal((n, h, w, c)).astype(dtype).transpose(0, 3, 1, 2)


def _frozen(a):
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("kind", ["depthwise", "1x1"])
@pytest.mark.parametrize("act", [("Relu", []), ("Clip", [0.0, 6.0]), ("Sigmoid", [])])
def test_replayed_runs_match_fresh_ones(kind, act, monkeypatch):
    # a node's channels-last run is recorded once per input signature; later runs with that signature
    # and the same frozen W and B repeat only the kernel calls, with the same results (Z read live)
    from onyx.ops.contrib.fused_conv import _prepare

    rng = np.random.default_rng(7)
    c = 12
    if kind == "depthwise":
        attrs = dict(group=c, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
        w = _frozen(rng.standard_normal((c, 1, 3, 3)).astype(np.float32))
    else:
        attrs = dict(group=1, kernel_shape=[1, 1], pads=[0, 0, 0, 0], strides=[1, 1])
        w = _frozen(rng.standard_normal((c, c, 1, 1)).astype(np.float32))
    b = _frozen(rng.standard_normal(c).astype(np.float32))
    run = _prepare(activation=act[0], activation_params=act[1], auto_pad="NOTSET", dilations=[1, 1], **attrs)
    forwards = []
    real = conv_mod.conv_forward
    monkeypatch.setattr(conv_mod, "conv_forward", lambda *a, **k: (forwards.append(1), real(*a, **k))[1])
    import onyx.ops.contrib.fused_conv as fc

    monkeypatch.setattr(fc, "conv_forward", conv_mod.conv_forward)

    def fresh(x, z=None):
        return real(
            x, w, b, auto_pad="NOTSET", dilations=[1, 1], post=lambda y: _act(y, act), act=act, z=z, **attrs
        )

    for shape in [(1, c, 9, 10), (2, c, 9, 10), (1, c, 9, 10), (1, c, 5, 6), (2, c, 9, 10)]:
        x = _cl_input(rng, shape)
        np.testing.assert_allclose(run(x, w, b), fresh(x), rtol=1e-6, atol=1e-6)
    assert len(forwards) == 3  # three signatures recorded, two runs replayed
    out = fresh(_cl_input(rng, (1, c, 9, 10))).shape
    for _ in range(2):  # with Z: recorded once, replayed with another Z
        x, z = _cl_input(rng, (1, c, 9, 10)), rng.standard_normal(out).astype(np.float32)
        np.testing.assert_allclose(run(x, w, b, z), fresh(x, z), rtol=1e-6, atol=1e-6)
    assert len(forwards) == 4


def _act(y, act):
    from onyx.ops.contrib._common import activate_

    return activate_(y, act[0], list(act[1]), "t")


def test_replay_needs_frozen_weights_and_the_same_objects():
    from onyx.ops.contrib.fused_conv import _prepare

    rng = np.random.default_rng(8)
    c = 8
    run = _prepare(
        activation="Relu", activation_params=[], auto_pad="NOTSET", dilations=[1, 1], group=c,
        kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1],
    )  # fmt: skip
    x = _cl_input(rng, (1, c, 6, 6))
    w = rng.standard_normal((c, 1, 3, 3)).astype(np.float32)  # writeable: a fed weight, never recorded
    b = _frozen(rng.standard_normal(c).astype(np.float32))
    first = run(x, w, b)
    w *= 2  # changed in place between runs: the next run sees it
    again = run(x, w, b)
    np.testing.assert_allclose(again, _relu_conv(x, w, b), rtol=1e-6, atol=1e-6)
    assert not np.allclose(again, first)
    w2 = _frozen(w.copy())
    a = run(x, w2, b)
    w3 = _frozen(w2 * 0.5)  # another frozen W object: not the recorded one
    np.testing.assert_allclose(run(x, w3, b), _relu_conv(x, w3, b), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(run(x, w2, b), a)


def _relu_conv(x, w, b):
    y = conv_forward(x, w, b, auto_pad="NOTSET", dilations=[1, 1], group=w.shape[0], kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1], strides=[1, 1])  # fmt: skip
    return np.maximum(y, 0)


def test_replay_memo_is_cleared_past_its_signatures():
    memo = conv_mod.ReplayMemo()
    w = _frozen(np.ones((2, 1, 1, 1), np.float32))
    for i in range(conv_mod.ReplayMemo.MAX_SIGNATURES + 1):
        memo.record(np.zeros((1, 2, i + 1, 1), np.float32), w, None, None, lambda x, z: x)
    assert len(memo._runs) == 1


def _depthwise_reference(x, w, b, sh, sw, pt, pl, oh, ow):
    """Channels-last depthwise convolution in float64, taps outside x skipped."""
    n, h, wd, c = x.shape
    kh, kw = w.shape[:2]
    y = np.zeros((n, oh, ow, c))
    for oy in range(oh):
        for ox in range(ow):
            acc = b.astype(np.float64).copy()
            for ky in range(kh):
                for kx in range(kw):
                    iy, ix = oy * sh - pt + ky, ox * sw - pl + kx
                    if 0 <= iy < h and 0 <= ix < wd:
                        acc = acc + w[ky, kx].astype(np.float64) * x[:, iy, ix].astype(np.float64)
            y[:, oy, ox] = acc
    return y


@pytest.mark.parametrize("width", list(range(1, 12)))
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("pads", [(0, 0), (1, 1), (0, 1), (2, 2)])
def test_depthwise_cl_every_width_and_edge(width, stride, pads):
    """The compiled channels-last 3x3 depthwise loop (four, two and one interior positions at a time,
    the edge positions with clamped, selected-away taps): every row width and remainder, both strides,
    zero/one/two-sided padding; an infinity at the border never reaches a window it lies outside."""
    rng = np.random.default_rng(width * 10 + stride)
    c, h = 11, 5
    x = rng.standard_normal((2, h, width, c)).astype(np.float32)
    x[:, 0, 0, 0] = np.inf  # top-left corner: only windows covering it turn inf/NaN
    w = rng.standard_normal((3, 3, c)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    pt, pl = pads
    oh = (h + 2 * pt - 3) // stride + 1
    ow = (width + 2 * pl - 3) // stride + 1
    if oh <= 0 or ow <= 0:
        return
    y = kernels.depthwise_conv2d_nhwc(x, w, b, strides=(stride, stride), pads=(pt, pl, pt, pl))
    want = _depthwise_reference(x, w, b, stride, stride, pt, pl, oh, ow)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    assert np.isfinite(y[..., 1:]).all()  # channels without the infinity stay finite everywhere


@pytest.mark.parametrize("act", [a for a in ACTS if a])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(1, 3, 17, 15), (2, 3, 8, 11)])
def test_rgb_stem_into_depthwise_leaves_channels_last(act, bias, shape, monkeypatch):
    """An RGB stem (3x3, stride 2, three input channels: the column-matrix GEMM) whose only consumer is
    a depthwise convolution leaves its output channels-last (the GEMM the other way round, finished by
    the compiled crop epilogue); the depthwise layer then runs channels-last. Same values
    as the numpy paths and onnxruntime; a non-compiled activation (Sigmoid) keeps the NCHW output."""
    rng = np.random.default_rng(len(act) + 7 * bias + shape[0])
    m = 12
    op, attrs = ACTS[act]
    inits = [
        numpy_helper.from_array((rng.standard_normal((m, 3, 3, 3)) / 3).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal((m, 1, 3, 3)).astype(np.float32), "w2"),
        numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "b1"),
        numpy_helper.from_array(np.array(0, np.float32), "lo"),
        numpy_helper.from_array(np.array(6, np.float32), "hi"),
    ]
    stem_in = ["x", "w1", "b1"] if bias else ["x", "w1"]
    extra = ["lo", "hi"] if op == "Clip" else []
    nodes = [
        helper.make_node("Conv", stem_in, ["s"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node(op, ["s", *extra], ["sa"], **attrs),
        helper.make_node("Conv", ["sa", "w2"], ["y"], group=m, pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes,
        "stem",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model = model.SerializeToString()
    feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    crops = []
    real = kernels.channels_last_crop_epilogue
    monkeypatch.setattr(
        kernels, "channels_last_crop_epilogue", lambda *a, **k: crops.append(1) or real(*a, **k)
    )
    got = onyx.InferenceSession(model).run(None, feeds)[0]
    assert bool(crops) == (act != "Sigmoid")
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    plain = onyx.InferenceSession(model).run(None, feeds)[0]
    assert got.flags.c_contiguous and got.shape == want.shape
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("channels", [1, 3, 16, 96, 1500])
@pytest.mark.parametrize("rows", [1, 2, 700])
@pytest.mark.parametrize("act", [(0, 0.0, 0.0), (1, 0.0, 0.0), (2, -0.5, 0.7), (3, 0.1, 0.0)])
def test_epilogue_cl_matches_numpy(channels, rows, act):
    """The channels-last epilogue (flat runs of whole rows with a tiled bias without z, row by row
    with z): bias, residual and activation as numpy computes them, NaN and infinities kept."""
    rng = np.random.default_rng(channels + rows)
    y0 = rng.standard_normal((rows, channels)).astype(np.float32)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)
    y0.flat[:5] = special[: min(5, y0.size)]
    b = rng.standard_normal(channels).astype(np.float32)
    code, lo, hi = act

    def finish(v):
        if code == 1:
            return np.where(v < 0, np.float32(0), v)
        if code == 2:
            return np.where(v > hi, np.float32(hi), np.where(v < lo, np.float32(lo), v))
        if code == 3:
            return np.where(v < 0, v * np.float32(lo), v)
        return v

    for z in (np.empty((0, 0), np.float32), rng.standard_normal((rows, channels)).astype(np.float32)):
        y = y0.copy()
        kernels.channels_last_epilogue(y, b, z if z.size else None, kernels.Activation(code, lo, hi))
        want = finish(y0 + b + (z if z.size else 0))
        np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
