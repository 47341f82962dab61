"""RNN / GRU / LSTM against onnxruntime: directions, sequence_lens, initial states, peepholes, clip,
activations with alpha/beta, linear_before_reset, input_forget, layout, old opsets, optional outputs."""

from __future__ import annotations

import itertools

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from onyx.errors import InvalidArgument
from tests.conformance.harness import run_model

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def build(op, opset, inputs, n_out, attrs, dtype=TensorProto.FLOAT):
    names = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    node_inputs = []
    graph_inputs = []
    feeds = []
    for name, value in zip(names, inputs):
        if value is None:
            node_inputs.append("")
            continue
        node_inputs.append(name)
        et = TensorProto.INT32 if name == "sequence_lens" else dtype
        graph_inputs.append(helper.make_tensor_value_info(name, et, value.shape))
        feeds.append(value)
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    outs = ["Y", "Y_h", "Y_c"][:n_out]
    node = helper.make_node(op, node_inputs, outs, **attrs)
    graph = helper.make_graph(
        [node], "g", graph_inputs, [helper.make_tensor_value_info(o, dtype, None) for o in outs]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, feeds


def make_inputs(op, rng, T, B, I, H, D, *, bias, lens, init, peep):
    G = GATES[op]
    f = np.float32
    X = rng.standard_normal((T, B, I)).astype(f)
    W = (rng.standard_normal((D, G * H, I)) * 0.5).astype(f)
    R = (rng.standard_normal((D, G * H, H)) * 0.5).astype(f)
    Bv = rng.standard_normal((D, 2 * G * H)).astype(f) if bias else None
    L = rng.integers(0, T + 1, size=B).astype(np.int32) if lens else None
    if L is not None:
        L[0] = T
        L = np.maximum(L, 1)
    h0 = rng.standard_normal((D, B, H)).astype(f) if init else None
    c0 = rng.standard_normal((D, B, H)).astype(f) if init and op == "LSTM" else None
    P = rng.standard_normal((D, 3 * H)).astype(f) if peep and op == "LSTM" else None
    ins = [X, W, R, Bv, L, h0]
    if op == "LSTM":
        ins += [c0, P]
    return ins


def ort_run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: v for i, v in zip(sess.get_inputs(), feeds)})


def compare(model, feeds, rtol=1e-4, atol=1e-5):
    exp = ort_run(model, feeds)
    got = run_model(model, feeds)
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        assert g.dtype == e.dtype
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


CASES = list(
    itertools.product(
        ["RNN", "GRU", "LSTM"], ["forward", "reverse", "bidirectional"], [False, True], [False, True]
    )
)


@pytest.mark.parametrize("op,direction,lens,init", CASES)
def test_against_ort(op, direction, lens, init):
    rng = np.random.default_rng(hash((op, direction, lens, init)) % 2**32)
    D = 2 if direction == "bidirectional" else 1
    ins = make_inputs(op, rng, 5, 3, 4, 6, D, bias=True, lens=lens, init=init, peep=True)
    n_out = 3 if op == "LSTM" else 2
    model, feeds = build(op, 14, ins, n_out, dict(hidden_size=6, direction=direction))
    compare(model, feeds)


@pytest.mark.parametrize("lbr", [0, 1])
def test_gru_linear_before_reset_clip(lbr):
    rng = np.random.default_rng(lbr)
    ins = make_inputs("GRU", rng, 4, 2, 3, 5, 2, bias=True, lens=True, init=True, peep=False)
    model, feeds = build(
        "GRU", 14, ins, 2, dict(hidden_size=5, direction="bidirectional", linear_before_reset=lbr, clip=0.7)
    )
    compare(model, feeds)


def test_lstm_input_forget_clip_peephole():
    rng = np.random.default_rng(7)
    ins = make_inputs("LSTM", rng, 6, 2, 3, 4, 1, bias=True, lens=False, init=True, peep=True)
    model, feeds = build("LSTM", 14, ins, 3, dict(hidden_size=4, input_forget=1, clip=0.5))
    compare(model, feeds)


@pytest.mark.parametrize(
    "op,acts,alpha,beta",
    [
        ("RNN", ["Relu"], None, None),
        ("RNN", ["LeakyRelu", "ScaledTanh"], [0.2, 0.7], [1.5]),
        ("GRU", ["HardSigmoid", "Softsign"], [0.3], [0.4]),
        ("GRU", ["Sigmoid", "Elu"], [0.8], None),
        ("LSTM", ["HardSigmoid", "Tanh", "Softplus"], [0.25], [0.45]),
        ("LSTM", ["Sigmoid", "Affine", "ThresholdedRelu"], [0.5, 0.1], [0.2]),
    ],
)
def test_activations(op, acts, alpha, beta):
    rng = np.random.default_rng(len(acts))
    D = 2 if len(acts) == 2 and op == "RNN" else 1
    ins = make_inputs(op, rng, 4, 2, 3, 4, D, bias=True, lens=False, init=False, peep=False)
    attrs = dict(hidden_size=4, activations=acts, direction="bidirectional" if D == 2 else "forward")
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    model, feeds = build(op, 14, ins, 3 if op == "LSTM" else 2, attrs)
    compare(model, feeds)


@pytest.mark.parametrize("op,opset", [("RNN", 7), ("GRU", 3), ("GRU", 7), ("LSTM", 7), ("RNN", 22)])
def test_old_and_new_opsets(op, opset):
    rng = np.random.default_rng(opset)
    ins = make_inputs(op, rng, 3, 2, 3, 4, 1, bias=True, lens=True, init=True, peep=False)
    model, feeds = build(op, opset, ins, 2, dict(hidden_size=4))
    model_ort, _ = build(op, max(opset, 7), ins, 2, dict(hidden_size=4))
    got = run_model(model, feeds)
    for g, e in zip(got, ort_run(model_ort, feeds)):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_opset1_forms(op):
    # opset 1 carries output_sequence (and GRU-1 defaults to the misspelt 'foward')
    rng = np.random.default_rng(3)
    ins = make_inputs(op, rng, 3, 2, 3, 4, 1, bias=True, lens=False, init=True, peep=False)
    model1, feeds = build(op, 1, ins, 2, dict(hidden_size=4, output_sequence=1))
    model7, _ = build(op, 7, ins, 2, dict(hidden_size=4))
    got = run_model(model1, feeds)
    exp = ort_run(model7, feeds)
    for g, e in zip(got, exp):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_layout_1(op):
    rng = np.random.default_rng(11)
    ins = make_inputs(op, rng, 4, 3, 2, 5, 2, bias=True, lens=True, init=True, peep=True)
    n_out = 3 if op == "LSTM" else 2
    model0, feeds0 = build(op, 14, ins, n_out, dict(hidden_size=5, direction="bidirectional"))
    exp = ort_run(model0, feeds0)
    ins1 = list(ins)
    ins1[0] = np.ascontiguousarray(ins[0].transpose(1, 0, 2))
    for k in (5, 6):
        if k < len(ins1) and ins1[k] is not None:
            ins1[k] = np.ascontiguousarray(ins1[k].transpose(1, 0, 2))
    model1, feeds1 = build(op, 14, ins1, n_out, dict(hidden_size=5, direction="bidirectional", layout=1))
    got = run_model(model1, feeds1)
    np.testing.assert_allclose(got[0], exp[0].transpose(2, 0, 1, 3), rtol=1e-4, atol=1e-5)
    for g, e in zip(got[1:], exp[1:]):
        np.testing.assert_allclose(g, e.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_only_y_h_requested(op):
    rng = np.random.default_rng(5)
    ins = make_inputs(op, rng, 3, 2, 3, 4, 1, bias=False, lens=False, init=False, peep=False)
    G = GATES[op]
    X, W, R = ins[:3]
    node = helper.make_node(op, ["X", "W", "R"], ["", "Y_h"], hidden_size=4)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, X.shape),
            helper.make_tensor_value_info("W", TensorProto.FLOAT, (1, G * 4, 3)),
            helper.make_tensor_value_info("R", TensorProto.FLOAT, (1, G * 4, 4)),
        ],
        [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    compare(model, [X, W, R])


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_other_dtypes(dtype):
    rng = np.random.default_rng(2)
    ins = make_inputs("LSTM", rng, 3, 2, 3, 4, 1, bias=True, lens=False, init=True, peep=True)
    et = TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT16
    model32, feeds32 = build("LSTM", 14, ins, 3, dict(hidden_size=4))
    exp = ort_run(model32, feeds32)
    feeds = [f.astype(dtype) for f in feeds32]
    model, _ = build(
        "LSTM", 14, [None if v is None else v.astype(dtype) for v in ins], 3, {"hidden_size": 4}, et
    )
    got = run_model(model, feeds)
    tol = 1e-2 if dtype == np.float16 else 1e-5
    for g, e in zip(got, exp):
        assert g.dtype == dtype
        np.testing.assert_allclose(g.astype(np.float32), e, rtol=tol, atol=tol)


def test_bad_shapes_raise():
    rng = np.random.default_rng(0)
    ins = make_inputs("GRU", rng, 3, 2, 3, 4, 1, bias=False, lens=False, init=False, peep=False)
    ins[1] = ins[1][:, :5]
    model, feeds = build("GRU", 14, ins, 2, dict(hidden_size=4))
    with pytest.raises(InvalidArgument):
        run_model(model, feeds)
    ins = make_inputs("RNN", rng, 3, 2, 3, 4, 1, bias=False, lens=False, init=False, peep=False)
    model, feeds = build("RNN", 14, ins, 2, dict(hidden_size=4, direction="sideways"))
    with pytest.raises(InvalidArgument):
        run_model(model, feeds)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_zero_length_sequence(op):
    rng = np.random.default_rng(9)
    ins = make_inputs(op, rng, 3, 2, 2, 3, 2, bias=True, lens=False, init=True, peep=False)
    ins[4] = np.array([3, 0], np.int32)
    model, feeds = build(
        op, 14, ins, 3 if op == "LSTM" else 2, dict(hidden_size=3, direction="bidirectional")
    )
    compare(model, feeds)
