"""The LSTM's default-activation time loop (sigmoid via one tanh over all four gates, the halving
folded into R and the input projection) gives bit-identical results to the general loop, and the
session's bidirectional LSTM (one input GEMM for both directions, cached R^T) matches onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.ops.rnn import _common as rnn_common
from onyx.ops.rnn import lstm
from onyx.ops.rnn._common import Prepared, activations


def _forward(rng, T, B, I, H, scale=1.0):  # noqa: E741
    """A forward LSTM's prepared inputs: X (T, B, I) times ``scale``, W, R, initial h and c."""
    X = (rng.normal(size=(T, B, I)) * scale).astype(np.float32)
    W = rng.normal(size=(1, 4 * H, I)).astype(np.float32)
    R = rng.normal(size=(1, 4 * H, H)).astype(np.float32)
    h0 = rng.normal(size=(1, B, H)).astype(np.float32)
    c0 = rng.normal(size=(1, B, H)).astype(np.float32)
    return Prepared("LSTM", X, W, R, None, [h0, c0], H, "forward", 0, gates=4)


@pytest.mark.parametrize(
    "T,B,I,H,clip,input_forget",
    [(7, 3, 5, 4, None, 0), (33, 1, 16, 32, None, 0), (5, 2, 3, 6, 0.7, 0), (5, 2, 3, 6, None, 1)],
)
def test_default_loop_is_bit_identical(T, B, I, H, clip, input_forget):  # noqa: E741
    p = _forward(np.random.default_rng(T * 100 + H), T, B, I, H)
    xw = p.input_projection(0, None)
    fns = activations(None, None, None, ["Sigmoid", "Tanh", "Tanh"], 1)
    general = lstm._recurrence(p, 0, xw.copy(), fns[0], None, clip, input_forget)
    fast = lstm._recurrence_default(p, 0, xw, clip, input_forget)
    for a, b in zip(general, fast):
        np.testing.assert_array_equal(a, b)


def _bidirectional(batch, T, I, H):  # noqa: E741
    rng = np.random.default_rng(batch)
    scale = np.float32(0.5 * np.sqrt(8 / H))  # pre-activations of the same size at any hidden size
    W = rng.normal(size=(2, 4 * H, I)).astype(np.float32) * scale
    R = rng.normal(size=(2, 4 * H, H)).astype(np.float32) * scale
    B = rng.normal(size=(2, 8 * H)).astype(np.float32) * 0.1
    h0 = rng.normal(size=(2, batch, H)).astype(np.float32)
    c0 = rng.normal(size=(2, batch, H)).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in [(W, "W"), (R, "R"), (B, "B"), (h0, "h0"), (c0, "c0")]]
    node = helper.make_node(
        "LSTM",
        ["X", "W", "R", "B", "", "h0", "c0"],
        ["Y", "Yh", "Yc"],
        hidden_size=H,
        direction="bidirectional",
    )
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("Y", "Yh", "Yc")]
    g = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, batch, I])], outs, inits
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    model = m.SerializeToString()
    return model, {"X": rng.normal(size=(T, batch, I)).astype(np.float32)}


@pytest.mark.parametrize("batch,T,I,H", [(1, 9, 6, 8), (5, 9, 6, 8), (1, 6, 16, 256)])
def test_bidirectional_lstm_matches_onnxruntime(batch, T, I, H, monkeypatch):  # noqa: E741
    """Small steps run the directions in turn, hidden 256 on two threads: same results either way."""
    model, feeds = _bidirectional(batch, T, I, H)
    got = onyx.InferenceSession(model).run(None, feeds)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    monkeypatch.setattr(rnn_common, "PARALLEL_STEP_MACS", 0 if H < 256 else 1 << 40)
    for a, b in zip(got, onyx.InferenceSession(model).run(None, feeds)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "T,B,I,H,clip,input_forget,scale",
    [
        (7, 1, 5, 4, None, 0, 1.0),
        (33, 1, 16, 32, None, 0, 1.0),
        (5, 3, 3, 17, 0.7, 0, 1.0),  # clipped pre-activations, an odd hidden size
        (5, 4, 3, 6, None, 1, 1.0),  # input and forget gates coupled
        (6, 2, 4, 9, None, 0, 40.0),  # saturated gates: exp over- and underflows
        (9, 8, 6, 16, None, 0, 1.0),  # the most batch rows the compiled loop takes
    ],
)
def test_compiled_loop_matches_numpy(T, B, I, H, clip, input_forget, scale):  # noqa: E741
    pytest.importorskip("numba")
    from onyx.ops import _perf

    jit = _perf.jit_module("onyx.ops.rnn._jit")
    if jit is None:
        pytest.skip("ONYX_NO_PERF is set")
    p = _forward(np.random.default_rng(T * 10 + B), T, B, I, H, scale)
    X, W, R, (h0, c0) = p.X, p.W, p.R, p.initial
    h_before = h0.copy()
    xw = p.input_projection(0, None)
    plain = lstm._recurrence_default(p, 0, xw.copy(), clip, input_forget)
    compiled = lstm._recurrence_jit(jit, p, 0, xw, clip, input_forget)
    for a, b in zip(compiled, plain):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)
    np.testing.assert_array_equal(h0, h_before)  # the initial state is not written
    X[2, 0, 0] = np.nan  # NaN reaches everything after it, as in numpy
    p = Prepared("LSTM", X, W, R, None, [h0, c0], H, "forward", 0, gates=4)
    y, _, _ = lstm._recurrence_jit(jit, p, 0, p.input_projection(0, None), clip, input_forget)
    assert not np.isnan(y[:2]).any() and np.isnan(y[2, 0]).all()


def test_compiled_loop_only_for_a_few_float32_rows(monkeypatch):
    model, feeds = _bidirectional(1, 5, 4, 8)
    calls = []
    real = lstm._recurrence_jit
    monkeypatch.setattr(lstm, "_recurrence_jit", lambda *a: (calls.append(a[1].B), real(*a))[1])
    onyx.InferenceSession(model).run(None, feeds)
    assert calls == ([1, 1] if lstm._compiled_loop(_prepared(1)) is not None else [])
    calls.clear()
    model, feeds = _bidirectional(lstm.JIT_MAX_BATCH + 1, 5, 4, 8)
    onyx.InferenceSession(model).run(None, feeds)
    assert calls == []


def _prepared(batch):
    z = np.zeros((1, 4, 2), np.float32)
    return Prepared("LSTM", np.zeros((3, batch, 2), np.float32), z, np.zeros((1, 4, 1), np.float32), None,
                    [None, None], 1, "forward", 0, gates=4)  # fmt: skip
