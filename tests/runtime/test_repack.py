"""GEMM weights stored transposed at session creation (onyx.runtime.repack) and the kernels that read
them (onyx.kernels.products.product, com.microsoft Attention): same results as the original layout, with
prepacking off, and as numpy / onnxruntime; weights that other nodes read, that callers may feed, or
that are small keep their layout."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.errors import InvalidArgument
from onyx.ir.builder import GraphBuilder
from onyx.kernels import blas, products
from onyx.model_io import load, save
from onyx.ops.contrib.attention import attention
from onyx.runtime.repack import DISABLE_KEY, transposed_copy

R = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _openblas_policy(monkeypatch):
    """These tests are about the transposed layout, which only numpy's OpenBLAS takes (on MKL the
    weights keep the file's layout: test_weights_keep_their_layout_on_mkl)."""
    monkeypatch.setattr(blas, "transposed_weights_pay", lambda: True)


def rn(*shape):
    return R.standard_normal(shape).astype(np.float32)


def _template(sess, name):
    """The array the session's plan holds for initializer ``name``."""
    value = sess._plan.graph.initializers[name]
    return sess._plan.template[sess._plan.slot_of[id(value)]]


def _unpacked():
    so = onyx.SessionOptions()
    so.add_session_config_entry(DISABLE_KEY, "1")
    return so


def _mlp(ws):
    """x (rows, 512) through MatMul/Gemm nodes whose weights are laid out to test every rule."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["rows", 512])
    other = b.input("other", np.float32, [300, 256])
    w1 = b.initializer("w1", ws["w1"])  # MatMul B: repacked
    w2 = b.initializer("w2", ws["w2"])  # Gemm B, transB=0: repacked
    w3 = b.initializer("w3", ws["w3"])  # Gemm B, transB=1: already transposed, kept
    w4 = b.initializer("w4", ws["w4"])  # a MatMul B also read by an Add: kept
    w5 = b.initializer("w5", ws["w5"])  # small: kept
    h = b.Relu(b.MatMul(x, w1))  # (rows, 768)
    h = b.Gemm(h, w2, b.const(ws["c2"]), alpha=0.5)  # (rows, 256)
    h = b.Gemm(h, w3, transB=1)  # (rows, 300)
    side = b.Add(w4, other)  # (300, 256)
    h = b.MatMul(h, w4)  # (rows, 256)
    h = b.MatMul(h, w5)  # (rows, 256) @ (256, 64)
    b.output(h, "y", np.float32, ["rows", 64])
    b.output(side, "side", np.float32, [300, 256])
    return b.model()


def _weights():
    return {
        "w1": rn(512, 768) / 20,
        "w2": rn(768, 256) / 20,
        "w3": rn(300, 256) / 20,
        "w4": rn(300, 256) / 20,
        "w5": rn(256, 64) / 20,
        "c2": rn(256),
    }


@pytest.mark.parametrize("rows", [1, 5, 16, 128, 700])
def test_repacked_weights_give_the_same_results(rows):
    ws = _weights()
    feeds = {"x": rn(rows, 512), "other": rn(300, 256)}
    packed = onyx.InferenceSession(_mlp(ws))
    plain = onyx.InferenceSession(_mlp(ws), _unpacked())
    got = packed.run(None, feeds)
    want = plain.run(None, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got[1], ws["w4"] + feeds["other"])
    assert got[0].flags.c_contiguous and got[0].shape == (rows, 64)


def test_which_weights_are_repacked():
    ws = _weights()
    s = onyx.InferenceSession(_mlp(ws))
    for name in ("w1", "w2"):
        t = _template(s, name)
        assert t.flags.f_contiguous and not t.flags.c_contiguous and not t.flags.writeable
        np.testing.assert_array_equal(t, ws[name])
    for name in ("w3", "w4", "w5"):
        assert _template(s, name).flags.c_contiguous, name
    off = onyx.InferenceSession(_mlp(ws), _unpacked())
    for name in ("w1", "w2", "w3", "w4", "w5"):
        assert _template(off, name).flags.c_contiguous, name


def test_initializer_a_caller_may_feed_is_kept():
    w = rn(512, 384)
    x = rn(3, 512)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 512]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [512, 384]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 384])],
        initializer=[numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    s = onyx.InferenceSession(model.SerializeToString())
    assert _template(s, "w").flags.c_contiguous
    np.testing.assert_allclose(s.run(None, {"x": x})[0], x @ w, rtol=1e-4, atol=1e-4)
    w2 = rn(512, 384)
    np.testing.assert_allclose(s.run(None, {"x": x, "w": w2})[0], x @ w2, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("source", ["file", "model"])
def test_saved_model_keeps_the_original_weights(tmp_path, source):
    """Weights read from a file (raw bytes) and weights held as arrays (a built model) save as they
    were after the session replaced them with transposed copies."""
    ws = _weights()
    path = tmp_path / "m.onnx"
    save(_mlp(ws), path)
    s = onyx.InferenceSession(str(path) if source == "file" else _mlp(ws))
    assert _template(s, "w1").flags.f_contiguous
    out = tmp_path / "again.onnx"
    save(s.model, out)
    again = load(str(out))
    for name in ("w1", "w2", "w3", "w4", "w5"):
        np.testing.assert_array_equal(again.graph.initializers[name].const.numpy(), ws[name])
    feeds = {"x": rn(16, 512), "other": rn(300, 256)}
    np.testing.assert_allclose(
        onyx.InferenceSession(str(out)).run(None, feeds)[0], s.run(None, feeds)[0], rtol=1e-5, atol=1e-5
    )


def test_transposed_copy():
    for shape in [(1, 1), (5, 300), (300, 5), (129, 257), (768, 3072)]:
        w = rn(*shape)
        t = transposed_copy(w)
        assert t.flags.c_contiguous
        np.testing.assert_array_equal(t, w.T)


@pytest.mark.parametrize("lead", [(), (2,), (2, 3)])
@pytest.mark.parametrize("rows", [9, 64, 200, 1500])
@pytest.mark.parametrize("k,n", [(512, 256), (768, 96), (256, 512)])
def test_product_with_a_transposed_weight(lead, rows, k, n):
    a = rn(*lead, rows, k)
    w = rn(k, n)
    wf = np.asfortranarray(w)
    macs = a.size * n
    want = a @ w
    got = products.product(a, wf, macs)
    assert got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    total_rows = a.size // k
    flips = k >= products.TRANSPOSE_MIN_DEPTH and total_rows * n * 4 <= products.TRANSPOSE_BACK_BYTES
    assert products.flips(a, wf) == flips
    assert not products.flips(a, w)  # a C-ordered weight is never flipped
    yt = products.product_t(a, wf, macs)
    assert yt.shape == (n, total_rows)
    np.testing.assert_allclose(yt, want.reshape(-1, n).T, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("rows", [1, 2, 8])
def test_few_rows_keep_the_gemv_rules(rows):
    """One to eight rows are GEMV-like: never flipped (their own thread rules apply), still exact."""
    a = rn(rows, 2048)
    wf = np.asfortranarray(rn(2048, 512))
    assert not products.flips(a, wf)
    np.testing.assert_allclose(products.product(a, wf, a.size * 512), a @ wf, rtol=1e-4, atol=1e-3)


def test_mismatched_inner_dimension_is_an_error_not_a_reshape():
    """A feed whose inner dimension does not match a prepacked weight (1024 = 2 x 512 elements a row)
    is refused, never folded into more rows."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["rows", "k"])
    b.output(b.MatMul(x, b.initializer("w", rn(512, 300))), "y", np.float32, ["rows", 300])
    s = onyx.InferenceSession(b.model())
    assert _template(s, "w").flags.f_contiguous
    with pytest.raises(onyx.OnyxError, match="MatMul"):
        s.run(None, {"x": rn(16, 1024)})
    assert not products.flips(rn(16, 1024), np.asfortranarray(rn(512, 300)))


def test_product_flips_only_matching_dtypes():
    a = rn(16, 512).astype(np.float64)
    wf = np.asfortranarray(rn(512, 64))
    assert not products.flips(a, wf)


def _attention_cases():
    d, s = 256, 6
    x = rn(2, s, d)
    m2 = np.ones((2, s), np.int32)
    m2[1, 4:] = 0
    yield "plain", (x, rn(d, 3 * d) / 16, rn(3 * d)), {"num_heads": 4}
    yield "no bias", (x, rn(d, 3 * d) / 16, None), {"num_heads": 8}
    yield "mask", (x, rn(d, 3 * d) / 16, rn(3 * d), m2), {"num_heads": 4}
    yield "causal", (x, rn(d, 3 * d) / 16, rn(3 * d)), {"num_heads": 4, "unidirectional": 1}
    sizes = [256, 256, 128]
    yield "sizes", (x, rn(d, 640) / 16, rn(640)), {"num_heads": 4, "qkv_hidden_sizes": sizes}
    past = rn(2, 2, 4, 3, 64)
    yield "past", (x, rn(d, 3 * d) / 16, rn(3 * d), None, past), {"num_heads": 4, "_num_outputs": 2}
    ab = rn(1, 4, s, s)
    yield "bias", (x, rn(d, 3 * d) / 16, rn(3 * d), None, None, ab), {"num_heads": 4, "scale": 0.1}


@pytest.mark.parametrize("case", list(_attention_cases()), ids=lambda c: c[0])
def test_attention_with_a_transposed_weight(case):
    _, inputs, attrs = case
    x, w, *rest = inputs
    want = attention(x, w, *rest, **attrs)
    got = attention(x, np.asfortranarray(w), *rest, **attrs)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for g, wnt in zip(got, want):
        assert g.shape == wnt.shape
        np.testing.assert_allclose(g, wnt, rtol=1e-4, atol=1e-4)


def test_attention_session_against_onnxruntime():
    d = 256
    x, w, bias = rn(1, 7, d), rn(d, 3 * d) / 16, rn(3 * d)
    node = helper.make_node("Attention", ["x", "w", "b"], ["y"], domain="com.microsoft", num_heads=4)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 7, d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 7, d])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "b")],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    data = helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString()
    s = onyx.InferenceSession(data)
    assert _template(s, "w").flags.f_contiguous
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(s.run(None, {"x": x})[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layout", [np.ascontiguousarray, np.asfortranarray])
def test_attention_bias_of_the_wrong_size(layout):
    x, w = rn(1, 4, 256), layout(rn(256, 768))
    with pytest.raises(InvalidArgument, match="bias"):
        attention(x, w, rn(700), num_heads=4)
    with pytest.raises(InvalidArgument, match="bias"):
        attention(x, w, rn(768, 1), num_heads=4)


def test_weights_keep_their_layout_on_mkl(monkeypatch):
    monkeypatch.setattr(blas, "transposed_weights_pay", lambda: False)
    ws = _weights()
    s = onyx.InferenceSession(_mlp(ws))
    for name in ("w1", "w2"):
        t = _template(s, name)
        assert t.flags.c_contiguous and not t.flags.f_contiguous
    feeds = {"x": rn(16, 512), "other": rn(300, 256)}
    want = onyx.InferenceSession(_mlp(ws), _unpacked()).run(None, feeds)
    np.testing.assert_allclose(s.run(None, feeds)[0], want[0], rtol=1e-4, atol=1e-4)
    a, wf = rn(64, 1024), np.asfortranarray(rn(1024, 300))
    assert not products.flips(a, wf)
    np.testing.assert_allclose(products.product(a, wf, 64 * 1024 * 300), a @ wf, rtol=1e-4, atol=1e-3)
