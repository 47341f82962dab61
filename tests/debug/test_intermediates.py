"""InferenceSession.run with any value of the original graph, and onyx.debug.run_all."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.debug import run_all
from onyx.errors import InvalidArgument, NotImplemented
from onyx.ir.builder import GraphBuilder

from ._models import bert_layer, conv_bn_relu, torch_block

X = np.random.default_rng(1).standard_normal((2, 4, 16)).astype(np.float32)
IMAGE = np.random.default_rng(2).standard_normal((2, 3, 8, 8)).astype(np.float32)


def _unoptimized(model_fn, name: str, feed: dict) -> np.ndarray:
    """What the unoptimized graph computes for ``name``: a level-0 session with it as a graph output."""
    m = model_fn()
    if name not in {v.name for v in m.graph.outputs}:
        m.graph.outputs.append(m.graph.values()[name])
    options = onyx.SessionOptions()
    options.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onyx.InferenceSession(m, options).run([name], feed)[0]


@pytest.mark.parametrize(
    ("model_fn", "feed", "names"),
    [
        (bert_layer, {"x": X}, ["mm1", "fc1", "gelu_erf", "gelu", "fc2", "residual", "ln_mean", "ln_std"]),
        (conv_bn_relu, {"image": IMAGE}, ["conv1", "bn", "relu1", "conv2"]),
    ],
)
def test_fused_away_values_are_exactly_the_unoptimized_ones(model_fn, feed, names):
    sess = onyx.InferenceSession(model_fn())  # ORT_ENABLE_ALL: these values are fused away
    planned = {v.name for n in sess.model.graph.nodes for v in n.outputs}
    assert set(names) - planned, "the test needs values the optimizer removed"
    got = sess.run(names, feed)
    for name, value in zip(names, got):
        assert np.array_equal(value, _unoptimized(model_fn, name, feed)), name
    # one at a time, in another order, with graph outputs, inputs and weights mixed in
    for name in names:
        assert np.array_equal(sess.run([name], feed)[0], _unoptimized(model_fn, name, feed))
    first_input = next(iter(feed))
    out_name = sess.get_outputs()[0].name
    mixed = sess.run([names[-1], out_name, first_input, names[0]], feed)
    assert np.array_equal(mixed[0], _unoptimized(model_fn, names[-1], feed))
    assert np.array_equal(mixed[1], _unoptimized(model_fn, out_name, feed))
    assert np.array_equal(mixed[2], feed[first_input])
    assert np.array_equal(mixed[3], _unoptimized(model_fn, names[0], feed))


def test_graph_outputs_still_come_from_the_optimized_plan():
    sess = onyx.InferenceSession(bert_layer())
    y = sess.run(None, {"x": X})[0]
    assert np.array_equal(sess.run(["y"], {"x": X})[0], y)
    assert not hasattr(sess, "_value_plans")  # no extra plan for plain runs
    sess.run(["gelu"], {"x": X})
    plans = sess._value_plans
    sess.run(["gelu"], {"x": X})
    assert len(plans._by_request) == 1  # built once per requested set, then reused


def test_initializer_and_weight_values():
    sess = onyx.InferenceSession(bert_layer())
    w1, sqrt2 = sess.run(["w1", "sqrt2"], {"x": X})
    assert np.array_equal(w1, bert_layer().graph.initializers["w1"].const.numpy())
    assert sqrt2 == np.float32(np.sqrt(2.0))


def test_from_a_file_and_bytes(tmp_path):
    path = str(tmp_path / "m.onnx")
    onyx.save(bert_layer(), path)
    expected = _unoptimized(bert_layer, "gelu_mul", {"x": X})
    assert np.array_equal(onyx.InferenceSession(path).run(["gelu_mul"], {"x": X})[0], expected)
    data = open(path, "rb").read()
    assert np.array_equal(onyx.InferenceSession(data).run(["gelu_mul"], {"x": X})[0], expected)


def test_model_file_rewritten_after_the_session_was_made(tmp_path):
    path = str(tmp_path / "m.onnx")
    onyx.save(bert_layer(), path)
    sess = onyx.InferenceSession(path)
    onyx.save(conv_bn_relu(), path)  # another model under the same name: the session cannot reload it
    with pytest.raises(onyx.Fail, match="changed or went away"):
        sess.run(["gelu"], {"x": X})
    assert sess.run(None, {"x": X})[0].shape == (2, 4, 16)  # plain runs are unaffected


def test_keep_values_option_keeps_them_in_an_optimized_plan():
    options = onyx.SessionOptions()
    options.add_session_config_entry("session.keep_values", "conv1, bn,relu2")
    sess = onyx.InferenceSession(conv_bn_relu(), options)
    kept = sess._value_plans._kept
    ops = [n.op_type for n in kept.model.graph.nodes]
    assert "BatchNormalization" in ops  # Conv+BN is not fused: both outputs are kept
    assert "FusedConv" in ops  # the rest is still optimized (conv2 + relu2 fuse, relu2 stays a value)
    names = ["conv1", "bn", "relu2", "pool"]
    got = sess.run(names, {"image": IMAGE})
    assert not sess._value_plans._by_request  # served by the kept plan, no unoptimized one built
    for name, value in zip(names, got):
        expected = _unoptimized(conv_bn_relu, name, {"image": IMAGE})
        # float32 convolution sums in another order: |error| <= k * eps * sum|terms|, k = 27 terms
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=27 * 1.2e-7 * 8)
    assert sess.get_outputs()[0].name == "pool" and len(sess.get_outputs()) == 1
    # the main plan fuses Conv+BN (the kept plan may not): the same output within float32 reordering
    np.testing.assert_allclose(sess.run(None, {"image": IMAGE})[0], got[3], rtol=1e-5, atol=1e-6)


def test_keep_values_unknown_name_fails_at_creation():
    options = onyx.SessionOptions()
    options.add_session_config_entry("session.keep_values", "conv1,bnn")
    with pytest.raises(InvalidArgument, match=r"'bnn'.*did you mean 'bn'"):
        onyx.InferenceSession(conv_bn_relu(), options)


def test_unknown_names_are_named_with_near_names():
    sess = onyx.InferenceSession(bert_layer())
    with pytest.raises(InvalidArgument, match=r"invalid output name 'gelu_mull'.*did you mean 'gelu_mul'"):
        sess.run(["gelu", "gelu_mull"], {"x": X})
    no_such = r"invalid output name 'zzz_nothing_like_it': neither one of the model's outputs \['y'\]"
    with pytest.raises(InvalidArgument, match=no_such):
        sess.run(["zzz_nothing_like_it"], {"x": X})
    with pytest.raises(InvalidArgument, match=r"(?i)missing"):
        sess.run(["gelu"], {})
    with pytest.raises(InvalidArgument, match=r"(?i)invalid input name|nope"):
        sess.run(["gelu"], {"x": X, "nope": X})


def _if_model():
    b = GraphBuilder(opset=17)
    cond = b.input("cond", np.bool_, [])
    x = b.input("x", np.float32, [3])
    then_b = b.subgraph("then")
    then_b.output(then_b.op("Neg", x, outputs=["inside_then"]))
    else_b = b.subgraph("else")
    else_b.output(else_b.op("Abs", x, outputs=["inside_else"]))
    y = b.op(
        "If", cond, outputs=["branch"], name="the_if", then_branch=then_b.graph, else_branch=else_b.graph
    )
    b.output(b.op("Relu", y, outputs=["y"]), "y")
    return b.model()


def test_subgraph_values_are_refused_by_name():
    sess = onyx.InferenceSession(_if_model())
    feed = {"cond": np.array(True), "x": np.array([1.0, -2.0, 3.0], np.float32)}
    assert np.array_equal(sess.run(["branch"], feed)[0], [-1.0, 2.0, -3.0])
    with pytest.raises(InvalidArgument, match=r"'inside_then'.*subgraph of node 'the_if' \(If\)"):
        sess.run(["inside_then"], feed)


def test_run_all_returns_every_value_in_topological_order():
    feed = {"x": X}
    values = run_all(bert_layer(), feed)
    order = [v.name for n in bert_layer().graph.nodes for v in n.outputs]
    assert list(values) == order
    for name in ("mm1", "gelu", "ln_norm", "y"):
        assert np.array_equal(values[name], _unoptimized(bert_layer, name, feed)), name
    with_inputs = run_all(bert_layer(), feed, include_inputs=True)
    assert list(with_inputs)[0] == "x" and "w1" in with_inputs and list(with_inputs)[-1] == "y"


def test_run_all_bad_input():
    with pytest.raises(NotImplemented, match="subgraphs"):
        run_all(_if_model(), {}, subgraphs=True)
    with pytest.raises(InvalidArgument, match="feed must be a dict"):
        run_all(bert_layer(), [X])
    with pytest.raises(InvalidArgument, match="expected an onyx Model"):
        run_all(42, {"x": X})
    with pytest.raises(onyx.InvalidProtobuf):
        run_all(b"\x08\x07garbage\xff", {"x": X})
    with pytest.raises(onyx.NoSuchFile):
        run_all("/nonexistent/model.onnx", {"x": X})


@pytest.mark.parametrize(("model_fn", "feed"), [(bert_layer, {"x": X}), (conv_bn_relu, {"image": IMAGE})])
def test_every_pass_keeps_a_kept_value_alive(model_fn, feed):
    """Each value alone in ``session.keep_values``: the optimized plan still has it (passes keep graph
    outputs), with the unoptimized value up to float32 reordering."""
    reference = run_all(model_fn(), feed)
    for name, expected in reference.items():
        options = onyx.SessionOptions()
        options.add_session_config_entry("session.keep_values", name)
        sess = onyx.InferenceSession(model_fn(), options)
        assert name in {v.name for v in sess._value_plans._kept.model.graph.outputs}
        got = sess.run([name], feed)[0]
        assert not sess._value_plans._by_request, name  # no unoptimized plan was needed
        # sums of at most 32 float32 terms of magnitude <~ 10 in another order
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=32 * 1.2e-7 * 10, err_msg=name)


@pytest.mark.filterwarnings("ignore")
def test_torch_exported_block_every_value_by_name():
    pytest.importorskip("torch")
    data, x = torch_block()
    sess = onyx.InferenceSession(data)
    fused = {n.op_type for n in sess.model.graph.nodes}
    assert {"SkipLayerNormalization", "BiasGelu"} <= fused
    everything = run_all(data, {"x": x})
    names = list(everything)
    assert "/ln1/LayerNormalization_output_0" in names and "/f1/Add_output_0" in names
    for name, value in zip(names, sess.run(names, {"x": x})):
        assert np.array_equal(value, everything[name]), name
    # and the unoptimized graph's output agrees with the optimized plan's within float32 reordering
    np.testing.assert_allclose(everything["y"], sess.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
