"""Common subexpression elimination, constant sharing, dead-code removal, and the level as a whole."""

from __future__ import annotations

import numpy as np

import onyx
from onyx.ir.builder import GraphBuilder
from onyx.optimizer.cse import eliminate_common_subexpressions
from onyx.optimizer.dead_code import eliminate_dead_code
from onyx.optimizer.levels import passes_for
from tests.optimizer._helpers import check_pass, ops, rand

F32 = np.float32
I64 = np.int64


def test_cse_merges_equal_nodes_and_follows_through():
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F32, [2, 3])
        a1 = b.Relu(b.Transpose(x, perm=[1, 0]))
        a2 = b.Relu(b.Transpose(x, perm=[1, 0]))
        a3 = b.Relu(b.Transpose(x, perm=[0, 1]))
        b.output(b.Add(a1, a2), "y", F32, None)
        b.output(a3, "z", F32, None)
        return b.model()

    m = check_pass(build, eliminate_common_subexpressions, {"x": rand(2, 3)})
    assert ops(m) == {"Transpose": 2, "Relu": 2, "Add": 1}


def test_cse_shares_equal_constants_first():
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F32, [3])
        u1 = b.Unsqueeze(x, b.const(np.array([0], I64)))
        u2 = b.Unsqueeze(x, b.const(np.array([0], I64)))
        b.output(b.Sub(u1, u2), "y", F32, None)
        return b.model()

    m = check_pass(build, eliminate_common_subexpressions, {"x": rand(3)})
    assert ops(m) == {"Unsqueeze": 1, "Sub": 1}
    assert len(m.graph.initializers) == 1


def test_cse_leaves_random_ops_and_two_graph_outputs():
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F32, [3])
        b.output(b.Relu(x), "r1", F32, [3])
        b.output(b.Relu(x), "r2", F32, [3])
        return b.model()

    check_pass(build, eliminate_common_subexpressions, {"x": rand(3)}, changed=False)
    b = GraphBuilder(opset=17)
    x = b.input("x", F32, [3])
    b.output(b.Sub(b.RandomUniformLike(x), b.RandomUniformLike(x)), "y", F32, [3])
    m = b.model()
    assert not eliminate_common_subexpressions(m)


def test_cse_keeps_one_name_when_the_duplicate_is_a_graph_output():
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F32, [3])
        r = b.Relu(x)
        b.output(b.Neg(r), "n", F32, [3])
        b.output(b.Relu(x), "r", F32, [3])
        return b.model()

    m = check_pass(build, eliminate_common_subexpressions, {"x": rand(3)})
    assert ops(m) == {"Relu": 1, "Neg": 1}


def test_dead_code_removes_unused_chains_and_initializers():
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", F32, [3])
        b.Exp(b.Add(x, b.const(np.ones(3, F32))))  # unused
        w = b.initializer("w", np.ones(3, F32))
        b.graph.inputs.append(w)  # an overridable initializer: an input, never removed
        b.output(b.Relu(x), "y", F32, [3])
        return b.model()

    m = check_pass(build, eliminate_dead_code, {"x": rand(3)})
    assert ops(m) == {"Relu": 1}
    assert list(m.graph.initializers) == ["w"]


def test_dead_code_keeps_what_subgraphs_read_or_output():
    def build():
        b = GraphBuilder(opset=17)
        cond = b.input("cond", np.bool_, [])
        x = b.input("x", F32, [3])
        used_inside = b.Abs(x)
        output_inside = b.Neg(x)
        b.Exp(x)  # dead
        then = b.subgraph("then")
        then.output(then.Sqrt(used_inside), "t")
        then.Log(x)  # dead inside the subgraph
        other = b.subgraph("else")
        other.output(output_inside, "e")  # an outer value as a subgraph output, without any node
        b.output(b.If(cond, then_branch=then.graph, else_branch=other.graph), "y", F32, [3])
        return b.model()

    feeds = [{"cond": np.array(c), "x": rand(3)} for c in (True, False)]
    m = check_pass(build, eliminate_dead_code, feeds)
    assert ops(m) == {"Abs": 1, "Neg": 1, "If": 1, "Sqrt": 1}


def test_dead_if_releases_the_outer_values_its_branches_read():
    b = GraphBuilder(opset=17)
    cond = b.input("cond", np.bool_, [])
    x = b.input("x", F32, [3])
    a = b.Abs(x)
    then = b.subgraph("then")
    then.output(then.Sqrt(a), "t")
    other = b.subgraph("else")
    other.output(other.Neg(a), "e")
    b.If(cond, then_branch=then.graph, else_branch=other.graph)  # unused
    b.output(b.Relu(x), "y", F32, [3])
    m = b.model()
    assert eliminate_dead_code(m)
    assert ops(m) == {"Relu": 1}
    assert not x.uses[1:] and not cond.uses


def _mixed_model():
    b = GraphBuilder(opset=17)
    x = b.input("x", F32, ["N", 2, 6, 6])
    y = b.Conv(b.Identity(x), b.const(rand(4, 2, 3, 3, seed=1)), pads=[1, 1, 1, 1])
    r = np.random.default_rng(2)
    bn = [b.const((r.random(4) + 0.5).astype(F32)) for _ in range(2)]
    bn.insert(1, b.const(r.standard_normal(4).astype(F32)))
    bn.insert(2, b.const(r.standard_normal(4).astype(F32) * 0.1))
    y = b.Relu(b.BatchNormalization(y, *bn))
    y = b.Dropout(b.Mul(y, b.const(np.full((4, 1, 1), 0.5, F32))))
    s = b.Shape(y)
    flat = b.Reshape(y, b.Concat(b.Slice(s, b.const(np.array([0], I64)), b.const(np.array([1], I64))),
                                 b.const(np.array([-1], I64)), axis=0))  # fmt: skip
    flat = b.Cast(flat, to=1)
    z = b.Add(b.MatMul(flat, b.const(rand(144, 5, seed=3))), b.const(rand(5, seed=4)))
    b.output(b.Identity(z), "logits", F32, ["N", 5])
    h = b.input("h", F32, ["N", 8])
    b.output(b.Add(b.const(rand(5, seed=5)), b.MatMul(h, b.const(rand(8, 5, seed=6)))), "head", F32, ["N", 5])
    return b.model()


def test_basic_level_on_a_small_cnn_and_a_fixed_point():
    feeds = [{"x": rand(n, 2, 6, 6), "h": rand(n, 8)} for n in (1, 3)]

    def level1(m):
        return onyx.optimize(m, 1) is m

    m = check_pass(_mixed_model, level1, feeds, rtol=1e-5, atol=1e-5)
    c = ops(m)
    assert "BatchNormalization" not in c and "Dropout" not in c and "Identity" not in c
    assert c["Gemm"] >= 1 and c["Conv"] == 1
    assert not any(p(m) for p in passes_for(1))  # a fixed point: no pass finds anything more


def test_session_default_level_runs_the_passes():
    m = _mixed_model()
    feeds = {"x": rand(2, 2, 6, 6), "h": rand(2, 8)}
    want = onyx.InferenceSession(_mixed_model(), _plain()).run(None, feeds)
    sess = onyx.InferenceSession(m)
    for got, w in zip(sess.run(None, feeds), want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)
    assert "BatchNormalization" not in ops(sess.model)


def _plain():
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    return so
