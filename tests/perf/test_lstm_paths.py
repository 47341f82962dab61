"""The LSTM's default-activation numpy loop (onyx.kernels.rnn: sigmoid via one tanh over all four gates)
gives bit-identical results to the general loop, and the session's bidirectional LSTM (one input GEMM
for both directions, cached R^T, the directions on one or two threads) matches onnxruntime. The C loop
against numpy: tests/kernels/test_rnn.py."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.kernels import rnn as rnn_kernels
from onyx.ops.rnn import lstm
from onyx.ops.rnn._common import Prepared, activation_functions


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
    fns = activation_functions(None, None, None, ["Sigmoid", "Tanh", "Tanh"], 1)
    general = lstm._recurrence(p, 0, xw.copy(), fns[0], None, clip, input_forget)
    h, c = p.initial[0][0].copy(), p.initial[1][0].copy()
    y = np.empty((T, B, H), np.float32)
    rnn_kernels._lstm_direction_numpy(xw, np.ascontiguousarray(p.R[0].T), h, c, y, clip, input_forget)
    for a, b in zip(general, (y, h, c)):
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
    monkeypatch.setattr(rnn_kernels, "COMPILED_PARALLEL_MACS", 0 if H < 256 else 1 << 40)
    for a, b in zip(got, onyx.InferenceSession(model).run(None, feeds)):
        np.testing.assert_array_equal(a, b)
