"""com.microsoft kernels against onnxruntime on random inputs."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

import onyx
from onyx.errors import OnyxError

MS = "com.microsoft"


def _model(op_type, inputs, n_out=1, domain=MS, out_names=None, out_types=None, **attrs):
    """A one-node model over numpy ``inputs`` (None: absent optional input); outputs typed from
    ``out_types`` (arrays) when given (onnxruntime accepts untyped outputs, onyx does not)."""
    names = [f"i{k}" if a is not None else "" for k, a in enumerate(inputs)]
    outs = out_names or [f"o{k}" for k in range(n_out)]
    node = helper.make_node(op_type, names, outs, domain=domain, **attrs)
    g_in = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
        for n, a in zip(names, inputs)
        if a is not None
    ]
    present = [o for o in outs if o]
    if out_types is None:
        g_out = [helper.make_empty_tensor_value_info(o) for o in present]
    else:
        g_out = [
            helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for o, a in zip(present, out_types)
        ]
    graph = helper.make_graph([node], "g", g_in, g_out)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    m = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    feeds = {n: a for n, a in zip(names, inputs) if a is not None}
    return m.SerializeToString(), feeds


def _both(op_type, inputs, n_out=1, domain=MS, out_names=None, **attrs):
    data, feeds = _model(op_type, inputs, n_out, domain, out_names, **attrs)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    data, _ = _model(op_type, inputs, n_out, domain, out_names, out_types=want, **attrs)
    got = onyx.InferenceSession(data).run(None, feeds)
    return got, want


def onyx_only(op_type, inputs, **attrs):
    data, feeds = _model(op_type, inputs, out_types=[np.zeros(1, np.float32)], **attrs)
    return onyx.InferenceSession(data).run(None, feeds)


def check(op_type, inputs, n_out=1, domain=MS, rtol=1e-4, atol=1e-5, out_names=None, **attrs):
    got, want = _both(op_type, inputs, n_out, domain, out_names, **attrs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


R = np.random.default_rng(0)


def rn(*shape, dtype=np.float32):
    return R.standard_normal(shape).astype(dtype)


ACTS = [
    ("Relu", []),
    ("Sigmoid", []),
    ("Tanh", []),
    ("LeakyRelu", [0.2]),
    ("Clip", [0.0, 6.0]),
    ("HardSigmoid", [0.3, 0.4]),
]


@pytest.mark.parametrize("act,params", ACTS)
def test_fused_conv(act, params):
    kw = {"activation": act}
    if params:
        kw["activation_params"] = params
    check("FusedConv", [rn(2, 4, 7, 7), rn(6, 4, 3, 3), rn(6)], pads=[1, 1, 1, 1], strides=[2, 2], **kw)


def test_fused_conv_z_and_group():
    x, w, b, z = rn(1, 4, 6, 6), rn(4, 2, 3, 3), rn(4), rn(1, 4, 4, 4)
    check("FusedConv", [x, w, b, z], activation="Relu", group=2)
    check("FusedConv", [x, w, None], activation="Tanh", group=2, auto_pad="SAME_UPPER")


@pytest.mark.parametrize("act,params", [a for a in ACTS if a[0] != "Clip"])
def test_fused_gemm(act, params):
    kw = {"activation": act}
    if params:
        kw["activation_alpha"] = params[0]
    if len(params) > 1:
        kw["activation_beta"] = params[1]
    check("FusedGemm", [rn(3, 5), rn(4, 5), rn(4)], transB=1, alpha=0.5, beta=2.0, **kw)
    check("FusedGemm", [rn(5, 3), rn(5, 4)], transA=1, **kw)


@pytest.mark.parametrize(
    "sa,sb,attrs",
    [
        ((3, 4), (4, 5), {}),
        ((2, 3, 4), (2, 5, 4), {"transB": 1, "alpha": 0.125}),
        ((2, 4, 3), (4, 5), {"transA": 1}),
        ((3, 2, 4), (2, 4, 5), {"transBatchA": 1}),
        ((2, 3, 4, 5), (3, 4, 5, 6), {"transBatchA": 1}),
        ((2, 3, 4, 5), (6, 3, 4, 5), {"transBatchA": 1, "transBatchB": 1, "transB": 1}),
        ((3, 2, 4), (5, 2, 4), {"transBatchA": 1, "transBatchB": 1, "transB": 1, "alpha": 2.0}),
        ((4, 2, 3), (2, 4, 5), {"transBatchA": 1, "transA": 1}),
        ((4,), (2, 4, 5), {}),
    ],
)
def test_fused_matmul(sa, sb, attrs):
    check("FusedMatMul", [rn(*sa), rn(*sb)], **attrs)


def test_gelus():
    x = rn(3, 8) * 3
    b = rn(8)
    check("Gelu", [x])
    check("BiasGelu", [x, b])
    check("FastGelu", [x])
    check("FastGelu", [x, b])
    check("QuickGelu", [x])
    check("QuickGelu", [x], alpha=1.3)
    check("Gelu", [x.astype(np.float16)], rtol=2e-3, atol=2e-3)


def test_bias_add_and_bias_softmax():
    x, b, sk = rn(2, 9, 8), rn(8), rn(2, 9, 8)
    data, feeds = _model("BiasAdd", [x, b, sk], out_types=[x])  # onnxruntime has no CPU kernel
    np.testing.assert_allclose(onyx.InferenceSession(data).run(None, feeds)[0], x + b + sk, rtol=1e-6)
    # onnxruntime has BiasSoftmax for CUDA/ROCm only: numpy is the oracle
    for d, bb in [(rn(2, 3, 4, 5), rn(2, 1, 4, 5)), (rn(2, 3, 4, 5), rn(3, 4, 5))]:
        data, feeds = _model("BiasSoftmax", [d, bb], out_types=[d], axis=3, is_inner_broadcast=0)
        e = np.exp((d + bb) - (d + bb).max(-1, keepdims=True))
        got = onyx.InferenceSession(data).run(None, feeds)[0]
        np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("n_out", [1, 2, 3, 4])
def test_skip_layer_norm(n_out):
    x, s, g, be, bi = rn(2, 5, 8), rn(2, 5, 8), rn(8), rn(8), rn(8)
    names = ["y", "mean", "inv", "sum"][:n_out]
    check("SkipLayerNormalization", [x, s, g, be, bi], out_names=names, epsilon=1e-5)
    check("SkipLayerNormalization", [x, s, g], out_names=names[:1])
    check("SkipLayerNormalization", [x, rn(5, 8), g, be], out_names=names[:1])


def test_skip_layer_norm_sum_only():
    x, s, g, be, bi = rn(2, 5, 8), rn(2, 5, 8), rn(8), rn(8), rn(8)
    check("SkipLayerNormalization", [x, s, g, be, bi], out_names=["y", "", "", "sum"], epsilon=1e-5)


def test_simplified_layer_norms():
    x, s, g = rn(2, 5, 8), rn(2, 5, 8), rn(8)
    check("SkipSimplifiedLayerNormalization", [x, s, g], epsilon=1e-6)
    check("SkipSimplifiedLayerNormalization", [x, s, g], out_names=["y", "", "", "sum"], epsilon=1e-6)
    check("SimplifiedLayerNormalization", [x, g], domain="", epsilon=1e-6)
    check("SimplifiedLayerNormalization", [x, g], domain="", out_names=["y", "inv"])


def _attn_inputs(b=2, s=5, d=16):
    return rn(b, s, d), rn(d, 3 * d) * 0.3, rn(3 * d)


@pytest.mark.parametrize("uni", [0, 1])
def test_attention_basic(uni):
    x, w, bias = _attn_inputs()
    check("Attention", [x, w, bias], num_heads=4, unidirectional=uni)


def test_attention_masks():
    x, w, bias = _attn_inputs()
    m2 = np.ones((2, 5), np.int32)
    m2[1, 3:] = 0
    check("Attention", [x, w, bias, m2], num_heads=4)
    check("Attention", [x, w, bias, np.array([5, 3], np.int32)], num_heads=4)
    m3 = (R.random((2, 5, 5)) > 0.3).astype(np.int32)
    m3[..., 0] = 1
    check("Attention", [x, w, bias, m3], num_heads=2, mask_filter_value=-1e9)
    ab = rn(1, 4, 5, 5)
    check("Attention", [x, w, bias, None, None, ab], num_heads=4, scale=0.2)


def test_attention_past_present():
    x, w, bias = _attn_inputs()
    past = rn(2, 2, 4, 3, 4)
    check("Attention", [x, w, bias, None, past], n_out=2, num_heads=4, unidirectional=1)


def test_mha():
    q, k, v = rn(2, 5, 16), rn(2, 7, 16), rn(2, 7, 16)
    check("MultiHeadAttention", [q, k, v], num_heads=4)
    check("MultiHeadAttention", [q, k, v, rn(48)], num_heads=2)
    ab = rn(2, 1, 5, 7)
    check("MultiHeadAttention", [q, k, v, None, None, ab], num_heads=4, scale=0.3)
    m = np.ones((2, 7), np.int32)
    m[0, 5:] = 0
    check("MultiHeadAttention", [q, k, v, None, m], num_heads=4)
    check("MultiHeadAttention", [q, q, q], num_heads=4, unidirectional=1)


def test_errors():
    with pytest.raises(OnyxError):
        onyx_only("FusedMatMul", [rn(3, 4), rn(5, 6)])
    with pytest.raises(OnyxError):
        onyx_only("FusedConv", [rn(1, 2, 4, 4), rn(2, 2, 3, 3)], activation="Bogus")
    with pytest.raises(OnyxError):
        onyx_only("Attention", [rn(2, 5, 16), rn(16, 48), rn(48)], num_heads=5)


@pytest.mark.parametrize("n_out", [2, 3])  # onnxruntime's type inference requires mask_index
def test_embed_layer_norm(n_out):
    ids = R.integers(0, 30, (2, 6)).astype(np.int32)
    seg = R.integers(0, 2, (2, 6)).astype(np.int32)
    mask = np.ones((2, 6), np.int32)
    mask[1, 4:] = 0
    w, p, sg, g, be = rn(30, 8), rn(16, 8), rn(2, 8), rn(8), rn(8)
    check("EmbedLayerNormalization", [ids, seg, w, p, sg, g, be, mask], n_out=n_out, epsilon=1e-5)
    check("EmbedLayerNormalization", [ids, None, w, p, None, g, be], n_out=n_out)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("layout", ["3d", "4d"])
def test_rotary_embedding(interleaved, layout):
    b, s, n, h = 2, 5, 2, 8
    x = rn(b, s, n * h) if layout == "3d" else rn(b, n, s, h)
    pos = R.integers(0, 10, (b, s)).astype(np.int64)
    ang = R.random((16, h // 2)).astype(np.float32) * 3
    kw = {"num_heads": n} if layout == "3d" else {}
    check("RotaryEmbedding", [x, pos, np.cos(ang), np.sin(ang)], interleaved=interleaved, **kw)


def test_rotary_embedding_partial():
    b, s, n, h = 1, 4, 2, 8
    x = rn(b, s, n * h)
    ang = R.random((8, 2)).astype(np.float32)
    pos = np.arange(s, dtype=np.int64)[None]
    check("RotaryEmbedding", [x, pos, np.cos(ang), np.sin(ang)], num_heads=n, rotary_embedding_dim=4)


def test_mha_present_and_qk_outputs():
    import onnxruntime as ort

    q, k, v, ab = rn(2, 5, 16), rn(2, 7, 16), rn(2, 7, 16), rn(2, 1, 5, 7)
    outs = [np.zeros(s, np.float32) for s in [(2, 5, 16), (2, 4, 7, 4), (2, 4, 7, 4), (2, 4, 5, 7)]]
    for ins in ([q, k, v, None, None, ab], [q, k, v]):
        data, feeds = _model("MultiHeadAttention", ins, n_out=4, out_types=outs, num_heads=4)
        want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
        got = onyx.InferenceSession(data).run(None, feeds)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "c,m,k,g,hw,s", [(8, 8, 3, 8, 14, 1), (8, 16, 1, 1, 14, 1), (8, 16, 3, 1, 14, 2), (32, 32, 3, 32, 7, 2)]
)
@pytest.mark.parametrize("act", ["Relu", "Sigmoid", "Clip"])
def test_fused_conv_activation_on_every_conv_path(c, m, k, g, hw, s, act):
    """The activation is applied per finished output block (depthwise, 1x1, im2col paths): same as after."""
    from onyx.ops.contrib.fused_conv import fused_conv
    from onyx.ops.nn.conv import conv

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
    w = rng.standard_normal((m, c // g, k, k)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32)
    params = [0.0, 6.0] if act == "Clip" else None
    kw = dict(group=g, pads=[k // 2] * 4, strides=[s, s])
    y = fused_conv(x, w, b, activation=act, activation_params=params, **kw)
    ref = conv(x, w, b, **kw)
    ref = {
        "Relu": lambda r: np.maximum(r, 0),
        "Sigmoid": lambda r: 1 / (1 + np.exp(-r)),
        "Clip": lambda r: np.clip(r, 0, 6),
    }[act](ref)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
