"""Kernels declared ``pure=False`` (random generators, Dropout) are never folded, merged, swept or cached:
the optimizer, shape inference and the plan's shape cache all ask the kernel, not a list of names."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.ir.builder import GraphBuilder
from onyx.ops import registry
from onyx.optimizer.constant_folding import fold_constants
from onyx.optimizer.cse import eliminate_common_subexpressions

DOMAIN = "test.h4.purity"
_calls = {"pure": 0, "noise": 0}


@onyx.custom_op("CountedDouble", domain=DOMAIN)
def counted_double(x):
    _calls["pure"] += 1
    return x * 2


@onyx.custom_op("CountedNoise", domain=DOMAIN, pure=False)
def counted_noise(x):
    _calls["noise"] += 1
    return x + np.random.default_rng().random(x.shape).astype(x.dtype)


@pytest.mark.parametrize(
    "op_type",
    ["RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"],
)
def test_random_ops_are_declared_impure(op_type):
    assert not registry.lookup(op_type, "", 21).pure


def test_dropout_is_impure_and_add_is_pure():
    assert all(not registry.lookup("Dropout", "", v).pure for v in (1, 6, 7, 10, 12, 13, 22))
    assert registry.lookup("Add", "", 21).pure


def _model_on_constant(op_type: str, domain: str = ""):
    b = GraphBuilder(opset=17, opsets={DOMAIN: 1})
    c = b.const(np.ones(3, np.float32))
    y = b.op(op_type, c, domain=domain)
    x = b.input("x", np.float32, [3])
    b.output(b.Add(x, y), "z", np.float32, [3])
    return b.model()


def test_impure_custom_op_is_not_folded_but_a_pure_one_is():
    pure = _model_on_constant("CountedDouble", DOMAIN)
    noise = _model_on_constant("CountedNoise", DOMAIN)
    assert fold_constants(pure)
    assert [n.op_type for n in pure.graph.nodes] == ["Add"]
    assert not fold_constants(noise)
    assert [n.op_type for n in noise.graph.nodes] == ["CountedNoise", "Add"]
    _calls["noise"] = 0
    s = onyx.InferenceSession(noise)
    x = np.zeros(3, np.float32)
    a, b = s.run(None, {"x": x})[0], s.run(None, {"x": x})[0]
    assert _calls["noise"] == 2  # run at every run, never once at session creation
    assert not np.array_equal(a, b)


def test_random_like_on_a_constant_is_not_folded():
    m = _model_on_constant("RandomUniformLike")
    assert not fold_constants(m)
    s = onyx.InferenceSession(m)
    x = np.zeros(3, np.float32)
    assert not np.array_equal(s.run(None, {"x": x})[0], s.run(None, {"x": x})[0])


def test_two_equal_random_nodes_are_not_merged():
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [4])
    r1 = b.RandomUniformLike(x)
    r2 = b.RandomUniformLike(x)
    b.output(b.Sub(r1, r2), "d", np.float32, [4])
    m = b.model()
    eliminate_common_subexpressions(m)
    assert [n.op_type for n in m.graph.nodes].count("RandomUniformLike") == 2
    d = onyx.InferenceSession(m).run(None, {"x": np.zeros(4, np.float32)})[0]
    assert np.any(d != 0)


def test_random_generator_with_constant_inputs_is_not_cached_per_shape():
    """RandomNormal reads no tensor: without its purity the plan would compute it once per shape."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [2, 3])
    r = b.RandomNormal(shape=[2, 3])
    b.output(b.Add(x, r), "y", np.float32, [2, 3])
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = onyx.InferenceSession(b.model(), so)
    x0 = np.zeros((2, 3), np.float32)
    assert not np.array_equal(s.run(None, {"x": x0})[0], s.run(None, {"x": x0})[0])


def test_shape_inference_knows_no_value_of_a_random_output():
    from onyx.shape_inference import _Inference

    m = _model_on_constant("RandomUniformLike")
    inf = _Inference(m, strict=False)
    inf.infer_graph(m.graph)
    info = inf.infos[id(m.graph.nodes[0].outputs[0])]
    assert info.value is None and info.dims == [3]
