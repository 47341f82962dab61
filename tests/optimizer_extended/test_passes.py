"""Each EXTENDED pass on small builder graphs: outputs before == after (onyx and onnxruntime)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from onyx.ir.builder import GraphBuilder
from onyx.optimizer.attention_fusion import attention_fusion
from onyx.optimizer.bias_gelu_fusion import bias_gelu_fusion
from onyx.optimizer.conv_activation_fusion import conv_activation_fusion
from onyx.optimizer.gelu_fusion import gelu_fusion
from onyx.optimizer.gemm_activation_fusion import gemm_activation_fusion
from onyx.optimizer.layer_norm_fusion import layer_norm_fusion
from onyx.optimizer.matmul_fusion import matmul_fusion
from onyx.optimizer.skip_layer_norm_fusion import skip_layer_norm_fusion
from tests.optimizer_extended._helpers import check_pass as _check_pass
from tests.optimizer_extended._helpers import ops

F = np.float32
_rng = [np.random.default_rng(0)]


def rn(*shape):
    return _rng[0].standard_normal(shape).astype(F)


def check_pass(build, *args, **kw):
    """The helper's check_pass with a model builder that draws the same weights every call."""

    def seeded():
        _rng[0] = np.random.default_rng(1234)
        return build()

    out = _check_pass(seeded, *args, **kw)
    _rng[0] = np.random.default_rng(99)
    return out


def c(b, x):
    return b.const(np.asarray(x, F))


# -- GELU -------------------------------------------------------------------------------------


def _gelu_model(form: str, opset: int = 17):
    b = GraphBuilder(opset=opset)
    x = b.input("x", F, ["N", 8])
    if form == "div":
        e = b.Erf(b.Div(x, c(b, math.sqrt(2))))
        y = b.Mul(b.Mul(x, b.Add(e, c(b, 1.0))), c(b, 0.5))
    elif form == "mul_half_first":
        e = b.Erf(b.Mul(x, c(b, 1 / math.sqrt(2))))
        y = b.Mul(b.Mul(x, c(b, 0.5)), b.Add(c(b, 1.0), e))
    elif form == "half_then_x":
        e = b.Erf(b.Div(x, c(b, 1.4142135)))
        y = b.Mul(b.Mul(b.Add(e, c(b, 1.0)), c(b, 0.5)), x)
    elif form == "wrong_constant":
        e = b.Erf(b.Div(x, c(b, 1.5)))
        y = b.Mul(b.Mul(x, b.Add(e, c(b, 1.0))), c(b, 0.5))
    elif form == "shared":
        e = b.Erf(b.Div(x, c(b, math.sqrt(2))))
        y = b.Mul(b.Mul(x, b.Add(e, c(b, 1.0))), c(b, 0.5))
        b.output(e, "e", F, ["N", 8])
    elif form == "tanh_pow":
        inner = b.Add(x, b.Mul(b.Pow(x, c(b, 3.0)), c(b, 0.044715)))
        t = b.Tanh(b.Mul(inner, c(b, math.sqrt(2 / math.pi))))
        y = b.Mul(b.Mul(x, c(b, 0.5)), b.Add(t, c(b, 1.0)))
    elif form == "tanh_mul":
        inner = b.Add(b.Mul(c(b, 0.044715), b.Mul(x, b.Mul(x, x))), x)
        t = b.Tanh(b.Mul(c(b, 0.7978845608), inner))
        y = b.Mul(b.Mul(x, b.Add(c(b, 1.0), t)), c(b, 0.5))
    b.output(y, "y", F, ["N", 8])
    return b.model()


@pytest.mark.parametrize("form", ["div", "mul_half_first", "half_then_x"])
def test_gelu_erf_forms(form):
    m = check_pass(lambda: _gelu_model(form), gelu_fusion, {"x": rn(3, 8) * 3}, expect="com.microsoft::Gelu")
    assert ops(m)["Erf"] == 0 and sum(ops(m).values()) == 1


@pytest.mark.parametrize("form", ["tanh_pow", "tanh_mul"])
def test_gelu_tanh_forms(form):
    m = check_pass(
        lambda: _gelu_model(form), gelu_fusion, {"x": rn(3, 8) * 3}, expect="com.microsoft::FastGelu"
    )
    assert sum(ops(m).values()) == 1


@pytest.mark.parametrize("form", ["wrong_constant", "shared"])
def test_gelu_not_fused(form):
    check_pass(lambda: _gelu_model(form), gelu_fusion, {"x": rn(3, 8)}, changed=False)


def _bias_gelu_model(bias_shape=(8,), fast=False):
    b = GraphBuilder(opset=17)
    x = b.input("x", F, ["N", 4, 6])
    h = b.Add(b.MatMul(x, c(b, rn(6, 8))), c(b, rn(*bias_shape)))
    if fast:
        inner = b.Add(h, b.Mul(b.Pow(h, c(b, 3.0)), c(b, 0.044715)))
        t = b.Tanh(b.Mul(inner, c(b, math.sqrt(2 / math.pi))))
        y = b.Mul(b.Mul(h, c(b, 0.5)), b.Add(t, c(b, 1.0)))
    else:
        y = b.Mul(b.Mul(h, b.Add(b.Erf(b.Div(h, c(b, math.sqrt(2)))), c(b, 1.0))), c(b, 0.5))
    b.output(y, "y", F, None)
    return b.model()


def _gelu_then_bias(m):
    return gelu_fusion(m) | bias_gelu_fusion(m)


@pytest.mark.parametrize("fast", [False, True])
def test_bias_gelu(fast):
    expect = "com.microsoft::FastGelu" if fast else "com.microsoft::BiasGelu"
    m = check_pass(lambda: _bias_gelu_model(fast=fast), _gelu_then_bias, {"x": rn(2, 4, 6)}, expect=expect)
    assert ops(m)["Add"] == 0


def test_bias_gelu_needs_a_1d_bias():
    m = _bias_gelu_model(bias_shape=(4, 8))
    gelu_fusion(m)
    assert bias_gelu_fusion(m) is False


# -- layer norms ------------------------------------------------------------------------------


def _ln_model(opset=17, square="pow", affine=True):
    b = GraphBuilder(opset=opset)
    x = b.input("x", F, ["N", 5, 8])
    ax = {"axes": [-1]} if opset < 18 else {}
    ins = [] if opset < 18 else [b.const(np.array([-1], np.int64))]
    mean = b.ReduceMean(x, *ins, keepdims=1, **ax)
    d = b.Sub(x, mean)
    sq = b.Pow(d, c(b, 2.0)) if square == "pow" else b.Mul(d, d)
    var = b.ReduceMean(sq, *([b.const(np.array([-1], np.int64))] if opset >= 18 else []), keepdims=1, **ax)
    y = b.Div(d, b.Sqrt(b.Add(var, c(b, 1e-5))))
    if affine:
        y = b.Add(b.Mul(y, c(b, rn(8))), c(b, rn(8)))
    b.output(y, "y", F, ["N", 5, 8])
    return b.model()


@pytest.mark.parametrize("opset,square,affine", [(17, "pow", True), (18, "mul", True), (17, "pow", False)])
def test_layer_norm(opset, square, affine):
    m = check_pass(
        lambda: _ln_model(opset, square, affine),
        layer_norm_fusion,
        {"x": rn(2, 5, 8)},
        expect="LayerNormalization",
    )
    assert sum(ops(m).values()) == 1


def test_layer_norm_needs_opset_17():
    check_pass(lambda: _ln_model(13), layer_norm_fusion, {"x": rn(2, 5, 8)}, changed=False)


def _sln_model(bias=True, sum_out=False, skip_shape=("N", 5, 8)):
    b = GraphBuilder(opset=17)
    x = b.input("x", F, ["N", 5, 6])
    s = b.input("s", F, list(skip_shape))
    h = b.MatMul(x, c(b, rn(6, 8)))
    if bias:
        h = b.Add(h, c(b, rn(8)))
    a = b.Add(h, s)
    y = b.LayerNormalization(a, c(b, rn(8)), c(b, rn(8)), axis=-1, epsilon=1e-5)
    b.output(y, "y", F, ["N", 5, 8])
    if sum_out:
        b.output(b.Relu(a), "r", F, ["N", 5, 8])
    return b.model()


@pytest.mark.parametrize("bias,sum_out", [(True, False), (False, False), (True, True)])
def test_skip_layer_norm(bias, sum_out):
    from onyx.shape_inference import infer_shapes

    def build():
        m = _sln_model(bias, sum_out)
        infer_shapes(m)
        return m

    feeds = {"x": rn(2, 5, 6), "s": rn(2, 5, 8)}
    m = check_pass(build, skip_layer_norm_fusion, feeds, expect="com.microsoft::SkipLayerNormalization")
    assert ops(m)["Add"] == 0 and ops(m)["LayerNormalization"] == 0


def test_skip_layer_norm_not_on_hidden_broadcast():
    from onyx.shape_inference import infer_shapes

    m = _sln_model(skip_shape=("N", 5, 1))
    infer_shapes(m)
    assert skip_layer_norm_fusion(m) is False


# -- Conv / Gemm / MatMul ---------------------------------------------------------------------

ACTS = [("Relu", {}, []), ("Sigmoid", {}, []), ("Tanh", {}, []), ("LeakyRelu", {"alpha": 0.2}, []),
        ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, []), ("Clip", {}, [0.0, 6.0])]  # fmt: skip


@pytest.mark.parametrize("act,attrs,bounds", ACTS)
def test_conv_activation(act, attrs, bounds):
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F, ["N", 3, 8, 8])
        y = b.Conv(x, c(b, rn(4, 3, 3, 3)), c(b, rn(4)), pads=[1, 1, 1, 1])
        y = b.op(act, y, *[c(b, v) for v in bounds], **attrs)
        b.output(y, "y", F, ["N", 4, 8, 8])
        return b.model()

    m = check_pass(build, conv_activation_fusion, {"x": rn(2, 3, 8, 8)}, expect="com.microsoft::FusedConv")
    assert sum(ops(m).values()) == 1


def test_conv_add_relu():
    from onyx.shape_inference import infer_shapes

    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F, [2, 4, 6, 6])
        y = b.Conv(x, c(b, rn(4, 4, 3, 3)), c(b, rn(4)), pads=[1, 1, 1, 1])
        b.output(b.Relu(b.Add(y, x)), "y", F, [2, 4, 6, 6])
        m = b.model()
        infer_shapes(m)
        return m

    m = check_pass(build, conv_activation_fusion, {"x": rn(2, 4, 6, 6)}, expect="com.microsoft::FusedConv")
    assert sum(ops(m).values()) == 1


def test_conv_activation_not_when_shared():
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F, ["N", 3, 8, 8])
        y = b.Conv(x, c(b, rn(4, 3, 3, 3)))
        b.output(b.Relu(y), "y", F, None)
        b.output(y, "z", F, None)
        return b.model()

    check_pass(build, conv_activation_fusion, {"x": rn(1, 3, 8, 8)}, changed=False)


@pytest.mark.parametrize("act,attrs,bounds", [a for a in ACTS if a[0] != "Clip"])
def test_gemm_activation(act, attrs, bounds):
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F, ["N", 6])
        y = b.Gemm(x, c(b, rn(5, 6)), c(b, rn(5)), transB=1, alpha=0.5)
        b.output(b.op(act, y, **attrs), "y", F, ["N", 5])
        return b.model()

    check_pass(build, gemm_activation_fusion, {"x": rn(3, 6)}, expect="com.microsoft::FusedGemm")


@pytest.mark.parametrize(
    "form", ["div_after", "mul_inputs", "transpose_b", "transpose_a_batch", "trans_batch"]
)
def test_matmul_fusion(form):
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F, [2, 3, 4, 5])
        z = b.input("z", F, [2, 3, 6, 5])
        if form == "div_after":
            y = b.Div(b.MatMul(x, b.Transpose(z, perm=[0, 1, 3, 2])), c(b, 8.0))
        elif form == "mul_inputs":
            y = b.MatMul(b.Mul(x, c(b, 0.5)), b.Mul(c(b, 0.25), b.Transpose(z, perm=[0, 1, 3, 2])))
        elif form == "transpose_b":
            y = b.MatMul(x, b.Transpose(z, perm=[0, 1, 3, 2]))
        elif form == "transpose_a_batch":
            y = b.MatMul(
                b.Transpose(x, perm=[0, 1, 3, 2]), b.Transpose(c(b, rn(2, 3, 4, 6)), perm=[0, 1, 2, 3])
            )
        else:
            y = b.MatMul(b.Transpose(x, perm=[1, 2, 0, 3]), c(b, rn(3, 4, 5, 7)))
        b.output(y, "y", F, None)
        return b.model()

    feeds = {"x": rn(2, 3, 4, 5), "z": rn(2, 3, 6, 5)}
    from onyx.shape_inference import infer_shapes

    def build_inferred():
        m = build()
        infer_shapes(m)
        return m

    m = check_pass(build_inferred, matmul_fusion, feeds, expect="com.microsoft::FusedMatMul")
    assert ops(m)["Transpose"] <= (1 if form == "transpose_a_batch" else 0)


def test_matmul_plain_untouched():
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F, [3, 4])
        b.output(b.MatMul(x, c(b, rn(4, 5))), "y", F, [3, 5])
        return b.model()

    check_pass(build, matmul_fusion, {"x": rn(3, 4)}, changed=False)


# -- attention --------------------------------------------------------------------------------


def _attention_model(bias=True, mask=True, k_form="0231", scale_form="both", shared_x=True, n=4, h=8):
    d = n * h
    b = GraphBuilder(opset=17)
    x = b.input("x", F, ["B", "S", d])
    xk = x if shared_x else b.input("xk", F, ["B", "S", d])
    m = b.input("m", F, ["B", 1, "S", "S"]) if mask else None

    def proj(inp):
        y = b.MatMul(inp, c(b, rn(d, d) * 0.3))
        return b.Add(c(b, rn(d)), y) if bias else y

    shape4 = b.const(np.array([0, 0, n, h], np.int64))
    q = b.Transpose(b.Reshape(proj(x), shape4), perm=[0, 2, 1, 3])
    kr = b.Reshape(proj(xk), shape4)
    v = b.Transpose(b.Reshape(proj(xk), shape4), perm=[0, 2, 1, 3])
    if k_form == "0231":
        kt = b.Transpose(kr, perm=[0, 2, 3, 1])
    else:
        kt = b.Transpose(b.Transpose(kr, perm=[0, 2, 1, 3]), perm=[0, 1, 3, 2])
    s = 1 / math.sqrt(h)
    if scale_form == "both":
        scores = b.MatMul(b.Mul(q, c(b, math.sqrt(s))), b.Mul(kt, c(b, math.sqrt(s))))
    else:
        scores = b.Div(b.MatMul(q, kt), c(b, math.sqrt(h)))
    if mask:
        scores = b.Add(scores, m)
    p = b.Softmax(scores, axis=-1)
    o = b.Transpose(b.MatMul(p, v), perm=[0, 2, 1, 3])
    y = b.Reshape(o, b.const(np.array([0, 0, d], np.int64)))
    b.output(y, "y", F, ["B", "S", d])
    return b.model()


def _feeds(mask=True, shared_x=True, d=32):
    f = {"x": rn(2, 5, d)}
    if not shared_x:
        f["xk"] = rn(2, 5, d)
    if mask:
        mm = np.zeros((2, 1, 5, 5), F)
        mm[1, :, :, 3:] = -10000.0
        f["m"] = mm
    return f


@pytest.mark.parametrize(
    "kw,expect",
    [
        ({}, "com.microsoft::Attention"),
        ({"mask": False, "k_form": "two", "scale_form": "div"}, "com.microsoft::Attention"),
        ({"shared_x": False}, "com.microsoft::MultiHeadAttention"),
        ({"bias": False}, "com.microsoft::MultiHeadAttention"),
    ],
)
def test_attention(kw, expect):
    from onyx.shape_inference import infer_shapes

    def build():
        m = _attention_model(**kw)
        infer_shapes(m)
        return m

    feeds = _feeds(kw.get("mask", True), kw.get("shared_x", True))
    m = check_pass(build, attention_fusion, feeds, expect=expect)
    assert ops(m)["Softmax"] == 0 and ops(m)["Transpose"] == 0


def test_attention_not_when_probabilities_are_read():
    m = _attention_model()
    sm = next(n for n in m.graph.nodes if n.op_type == "Softmax")
    m.graph.outputs.append(sm.outputs[0])
    from onyx.ir.types import tensor_type

    sm.outputs[0].type = tensor_type(F, None)
    assert attention_fusion(m) is False


def test_skip_layer_norm_skip_with_batch_one():
    from onyx.shape_inference import infer_shapes

    def build():
        m = _sln_model(bias=True, skip_shape=(1, 5, 8))
        infer_shapes(m)
        return m

    feeds = {"x": rn(2, 5, 6), "s": rn(1, 5, 8)}
    check_pass(build, skip_layer_norm_fusion, feeds, expect="com.microsoft::SkipLayerNormalization")


def _gpt2_attention_model(n=4, h=8):
    """GPT-2's Conv1D projection: Reshape -> Gemm -> Reshape -> Split, causal additive mask."""
    d = n * h
    b = GraphBuilder(opset=17)
    x = b.input("x", F, [2, 5, d])
    m = b.input("m", F, [1, 1, 5, 5])
    g = b.Gemm(b.Reshape(x, b.const(np.array([-1, d], np.int64))), c(b, rn(d, 3 * d) * 0.3), c(b, rn(3 * d)))
    y3 = b.Reshape(g, b.const(np.array([2, 5, 3 * d], np.int64)))
    q3, k3, v3 = b.op("Split", y3, b.const(np.array([d, d, d], np.int64)), axis=2, outputs=3)
    shape4 = b.const(np.array([0, 0, n, h], np.int64))
    q = b.Transpose(b.Reshape(q3, shape4), perm=[0, 2, 1, 3])
    k = b.Transpose(b.Reshape(k3, shape4), perm=[0, 2, 3, 1])
    v = b.Transpose(b.Reshape(v3, shape4), perm=[0, 2, 1, 3])
    p = b.Softmax(b.Add(b.Div(b.MatMul(q, k), c(b, math.sqrt(h))), m), axis=-1)
    o = b.Transpose(b.MatMul(p, v), perm=[0, 2, 1, 3])
    b.output(b.Reshape(o, b.const(np.array([-1, d], np.int64))), "y", F, [10, d])
    return b.model()


def test_attention_gpt2_conv1d():
    from onyx.shape_inference import infer_shapes

    def build():
        m = _gpt2_attention_model()
        infer_shapes(m)
        return m

    causal = np.triu(np.full((5, 5), -1e4, F), 1)[None, None]
    m = check_pass(
        build, attention_fusion, {"x": rn(2, 5, 32), "m": causal}, expect="com.microsoft::Attention"
    )
    assert ops(m)["Gemm"] == 0 and ops(m)["Split"] == 0


def test_gelu_not_fused_when_a_constant_broadcasts_or_not_float32():
    def build(dtype, half_shape):
        b = GraphBuilder(opset=17)
        x = b.input("x", dtype, ["N", 8])
        k = lambda v, shape=(): b.const(np.full(shape, v, dtype))  # noqa: E731
        e = b.Erf(b.Div(x, k(math.sqrt(2))))
        y = b.Mul(b.Mul(x, b.Add(e, k(1.0))), k(0.5, half_shape))
        b.output(y, "y", dtype, None)
        return b.model()

    check_pass(lambda: build(F, (1, 1, 1)), gelu_fusion, {"x": rn(3, 8)}, changed=False)
    assert gelu_fusion(build(np.float64, ())) is False  # (onnxruntime has no float64 Erf to compare)


def test_value_listed_as_subgraph_output_is_kept():
    """A GELU's intermediate that an If branch outputs directly (no node reads it) stays."""
    b = GraphBuilder(opset=17)
    x = b.input("x", F, [3, 8])
    cond = b.input("c", np.bool_, [])
    e = b.Erf(b.Div(x, c(b, math.sqrt(2))))
    y = b.Mul(b.Mul(x, b.Add(e, c(b, 1.0))), c(b, 0.5))
    then = b.subgraph("then")
    then.output(e, None, F, [3, 8])
    other = b.subgraph("else")
    other.output(other.Identity(x), "o", F, [3, 8])
    r = b.If(cond, then_branch=then.graph, else_branch=other.graph)
    b.output(y, "y", F, [3, 8])
    b.output(r, "r", F, [3, 8])
    assert gelu_fusion(b.model()) is False


@pytest.mark.parametrize("act", [None, "Sigmoid"])
def test_conv_add_without_relu(act):
    from onyx.shape_inference import infer_shapes

    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F, [2, 4, 6, 6])
        y = b.Add(x, b.Conv(x, c(b, rn(4, 4, 3, 3)), c(b, rn(4)), pads=[1, 1, 1, 1]))
        if act:
            y = b.op(act, y)
        b.output(y, "y", F, [2, 4, 6, 6])
        m = b.model()
        infer_shapes(m)
        return m

    m = check_pass(build, conv_activation_fusion, {"x": rn(2, 4, 6, 6)}, expect="com.microsoft::FusedConv")
    assert sum(ops(m).values()) == 1


def _torchscript_style_attention(n=4, h=8):
    """The context's target shape is computed from Shape(...) of the attention's intermediates, and
    the context goes through a no-op Reshape before its Transpose (as the TorchScript exports do)."""
    d = n * h
    b = GraphBuilder(opset=17)
    x = b.input("x", F, ["B", "S", d])
    i64 = lambda *v: b.const(np.array(v, np.int64))  # noqa: E731

    def proj():
        return b.Add(b.MatMul(x, c(b, rn(d, d) * 0.3)), c(b, rn(d)))

    def dim(v, k):
        return b.Unsqueeze(b.Gather(b.Shape(v), b.const(np.array(k, np.int64)), axis=0), i64(0))

    q4 = b.Transpose(b.Reshape(proj(), i64(0, 0, n, h)), perm=[0, 2, 1, 3])
    k4 = b.Transpose(b.Reshape(proj(), i64(0, 0, n, h)), perm=[0, 2, 3, 1])
    v4 = b.Transpose(b.Reshape(proj(), i64(0, 0, n, h)), perm=[0, 2, 1, 3])
    p = b.Softmax(b.MatMul(b.Mul(q4, c(b, h**-0.5)), k4), axis=-1)
    ctx4 = b.MatMul(p, v4)
    view = b.Reshape(ctx4, b.Concat(dim(ctx4, 0), i64(-1), dim(q4, 2), dim(v4, 3), axis=0))
    o = b.Transpose(view, perm=[0, 2, 1, 3])
    y = b.Reshape(o, b.Concat(dim(o, 0), dim(o, 1), i64(d), axis=0))
    b.output(y, "y", F, ["B", "S", d])
    return b.model()


def test_attention_rewires_shape_arithmetic():
    from onyx.shape_inference import infer_shapes

    def build():
        m = _torchscript_style_attention()
        infer_shapes(m)
        return m

    m = check_pass(build, attention_fusion, {"x": rn(2, 5, 32)}, expect="com.microsoft::Attention")
    assert ops(m)["Softmax"] == 0 and ops(m)["MatMul"] == 0 and ops(m)["Transpose"] == 0


@pytest.mark.parametrize("alpha", [None, 1.702])
def test_quick_gelu(alpha):
    from onyx.optimizer.quick_gelu_fusion import quick_gelu_fusion

    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F, ["N", 8])
        s = b.Sigmoid(x if alpha is None else b.Mul(c(b, alpha), x))
        b.output(b.Mul(s, x), "y", F, ["N", 8])
        return b.model()

    m = check_pass(build, quick_gelu_fusion, {"x": rn(3, 8) * 3}, expect="com.microsoft::QuickGelu")
    assert sum(ops(m).values()) == 1


@pytest.mark.parametrize("fill", [-3.4028234663852886e38, -np.inf])
def test_attention_masked_fill(fill):
    """Older GPT-2 exports: Where(causal, scores, fill) then + the padding mask."""
    from onyx.shape_inference import infer_shapes

    n, h, d = 4, 8, 32

    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F, ["B", 5, d])
        pad = b.input("m", F, ["B", 1, 1, 5])
        causal = b.const(np.tril(np.ones((5, 5), np.bool_))[None, None])
        shape4 = b.const(np.array([0, 0, n, h], np.int64))

        def heads(perm):
            y = b.Add(b.MatMul(x, c(b, rn(d, d) * 0.3)), c(b, rn(d)))
            return b.Transpose(b.Reshape(y, shape4), perm=perm)

        q, k, v = heads([0, 2, 1, 3]), heads([0, 2, 3, 1]), heads([0, 2, 1, 3])
        w = b.Div(b.MatMul(q, k), c(b, math.sqrt(h)))
        w = b.Where(causal, w, c(b, fill))
        p = b.Softmax(b.Add(w, pad), axis=-1)
        o = b.Transpose(b.MatMul(p, v), perm=[0, 2, 1, 3])
        b.output(b.Reshape(o, b.const(np.array([0, 0, d], np.int64))), "y", F, ["B", 5, d])
        m = b.model()
        infer_shapes(m)
        return m

    pad = np.zeros((2, 1, 1, 5), F)
    pad[1, ..., 3:] = -10000.0
    m = check_pass(build, attention_fusion, {"x": rn(2, 5, d), "m": pad}, expect="com.microsoft::Attention")
    assert ops(m)["Softmax"] == 0
