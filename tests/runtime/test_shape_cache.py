"""Values computed from shapes and constants alone are evaluated once per shape signature
(onyx.runtime.shape_cache): the same results as evaluating them every run, for every signature, with
data-dependent shapes, fed initializers, random ops and failures handled as before."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.errors import OnyxError
from onyx.ir.builder import GraphBuilder
from onyx.runtime import shape_cache
from onyx.runtime.shape_cache import ShapeFunction

R = np.random.default_rng(3)


def _no_opt() -> onyx.SessionOptions:
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    return so


def _functions(sess) -> list[ShapeFunction]:
    return [st.fn for st in sess._plan.steps if isinstance(st.fn, ShapeFunction)]


def _flatten_model():
    """y = Reshape(x, [x.shape[0], -1]) computed the way exporters write it, plus a length-based mask."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["n", "c", "w"])
    shape = b.Shape(x)
    n = b.Unsqueeze(b.Gather(shape, b.const(np.int64(0))), b.const(np.array([0], np.int64)))
    target = b.Concat(n, b.const(np.array([-1], np.int64)), axis=0)
    y = b.Reshape(x, target)
    w = b.Gather(b.Shape(x), b.const(np.int64(2)))
    steps = b.Range(b.const(np.int64(0)), w, b.const(np.int64(1)))
    mask = b.Less(b.Unsqueeze(steps, b.const(np.array([1], np.int64))), steps)  # (w, w) upper triangle
    b.output(y, "y", np.float32, ["n", None])
    b.output(mask, "mask", np.bool_, [None, None])
    return b.model()


@pytest.mark.parametrize("level", ["none", "default"])
def test_results_for_every_signature_and_cache_hits(level):
    sess = onyx.InferenceSession(_flatten_model(), _no_opt() if level == "none" else None)
    fns = _functions(sess)
    assert fns, "no value was cached"
    plain = [st.node.op_type for st in sess._plan.steps if not isinstance(st.fn, ShapeFunction)]
    assert not {"Gather", "Unsqueeze", "Range", "Less"} & set(plain)
    for shape in [(2, 3, 4), (2, 3, 4), (5, 1, 7), (2, 3, 4), (1, 1, 1), (3, 0, 2)]:
        x = R.standard_normal(shape).astype(np.float32)
        y, mask = sess.run(None, {"x": x})
        np.testing.assert_array_equal(y, x.reshape(shape[0], -1))
        np.testing.assert_array_equal(mask, np.triu(np.ones((shape[2], shape[2]), bool), 1))
        assert y.flags.writeable and mask.flags.writeable  # outputs are the caller's to change
    assert max(len(f.cache) for f in fns) == 4  # one entry per distinct signature


def test_cached_values_are_read_only_and_shared_between_runs():
    sess = onyx.InferenceSession(_flatten_model(), _no_opt())
    x = np.ones((2, 3, 4), np.float32)
    sess.run(None, {"x": x})
    values = [v for f in _functions(sess) for v in f.cache.values()]
    assert values and all(not v.flags.writeable for v in values if isinstance(v, np.ndarray))
    _, mask1 = sess.run(None, {"x": x})
    mask1[:] = True  # the caller's copy: the cache is untouched
    _, mask2 = sess.run(None, {"x": x})
    np.testing.assert_array_equal(mask2, np.triu(np.ones((4, 4), bool), 1))


def test_shapes_that_depend_on_values_are_read_at_run_time():
    """Shape(NonZero(x)): same input shape, different output shapes; the key is the shape NonZero made."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["n"])
    count = b.Gather(b.Shape(b.NonZero(x)), b.const(np.int64(1)))
    y = b.ConstantOfShape(
        b.Unsqueeze(count, b.const(np.array([0], np.int64))), value=np.array([2.0], np.float32)
    )
    b.output(y, "y", np.float32, [None])
    sess = onyx.InferenceSession(b.model(), _no_opt())
    assert _functions(sess)
    for values in ([0, 1, 2, 0], [1, 1, 1, 1], [0, 0, 0, 0], [0, 1, 2, 0]):
        (y,) = sess.run(None, {"x": np.array(values, np.float32)})
        np.testing.assert_array_equal(y, np.full(np.count_nonzero(values), 2.0, np.float32))


def test_a_fed_initializer_is_not_a_constant():
    """An initializer listed among the inputs may be fed: a value computed from it is not cached by shape."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["n", "m"])
    k = b.initializer("k", np.array([1], np.int64))
    b.graph.inputs.append(k)
    n = b.Unsqueeze(b.Gather(b.Shape(x), b.const(np.int64(0))), b.const(np.array([0], np.int64)))
    y = b.Reshape(x, b.Concat(n, k, b.const(np.array([-1], np.int64)), axis=0))
    b.output(y, "y", np.float32, None)
    sess = onyx.InferenceSession(b.model(), _no_opt())
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    assert sess.run(None, {"x": x})[0].shape == (2, 1, 6)
    assert sess.run(None, {"x": x, "k": np.array([3], np.int64)})[0].shape == (2, 3, 2)
    assert sess.run(None, {"x": x})[0].shape == (2, 1, 6)


def test_random_values_are_drawn_every_run():
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["n"])
    zeros = b.ConstantOfShape(b.Shape(x), value=np.array([0.0], np.float32))
    y = b.RandomUniformLike(zeros)
    b.output(y, "y", np.float32, ["n"])
    sess = onyx.InferenceSession(b.model(), _no_opt())
    assert not any(
        st.node.op_type == "RandomUniformLike" and isinstance(st.fn, ShapeFunction) for st in sess._plan.steps
    )
    x = np.zeros(64, np.float32)
    assert not np.array_equal(sess.run(None, {"x": x})[0], sess.run(None, {"x": x})[0])


def test_large_values_are_computed_every_run(monkeypatch):
    monkeypatch.setattr(shape_cache, "MAX_CACHED_BYTES", 64)
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["n"])
    y = b.ConstantOfShape(b.Shape(x), value=np.array([1.5], np.float32))
    b.output(b.Add(y, x), "y", np.float32, ["n"])
    sess = onyx.InferenceSession(b.model(), _no_opt())
    (f,) = _functions(sess)
    np.testing.assert_array_equal(sess.run(None, {"x": np.zeros(8, np.float32)})[0], np.full(8, 1.5))
    assert len(f.cache) == 1  # 32 bytes: kept
    np.testing.assert_array_equal(sess.run(None, {"x": np.ones(100, np.float32)})[0], np.full(100, 2.5))
    assert len(f.cache) == 1  # 400 bytes: not kept


def test_a_full_table_is_cleared(monkeypatch):
    monkeypatch.setattr(shape_cache, "MAX_SIGNATURES", 3)
    sess = onyx.InferenceSession(_flatten_model(), _no_opt())
    for n in range(1, 8):
        x = np.ones((n, 2, 2), np.float32)
        assert sess.run(None, {"x": x})[0].shape == (n, 4)
        assert all(len(f.cache) <= 3 for f in _functions(sess))


def test_a_table_past_its_byte_budget_is_cleared(monkeypatch):
    """Masks for ever longer sequences: each table holds at most MAX_TABLE_BYTES of arrays."""
    monkeypatch.setattr(shape_cache, "MAX_TABLE_BYTES", 100)
    sess = onyx.InferenceSession(_flatten_model(), _no_opt())
    for w in (4, 6, 8, 4, 9):  # masks of 16, 36, 64, 16, 81 bytes
        _, mask = sess.run(None, {"x": np.ones((1, 1, w), np.float32)})
        np.testing.assert_array_equal(mask, np.triu(np.ones((w, w), bool), 1))
        for f in _functions(sess):
            assert f.nbytes == sum(v.nbytes for v in f.cache.values()) <= 100


def test_a_failure_inside_a_shape_value_names_its_node():
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["n", "m"])
    dim = b.Gather(b.Shape(x), b.const(np.int64(5)), name="bad_gather")  # x has rank 2
    y = b.Reshape(
        x,
        b.Concat(
            b.Unsqueeze(dim, b.const(np.array([0], np.int64))), b.const(np.array([-1], np.int64)), axis=0
        ),
    )
    b.output(y, "y", np.float32, None)
    sess = onyx.InferenceSession(b.model(), _no_opt())
    with pytest.raises(OnyxError, match="bad_gather"):
        sess.run(None, {"x": np.ones((2, 3), np.float32)})


def test_a_loop_body_reads_a_cached_value():
    """A value of the shape region read by a subgraph (Loop body) is produced for it."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["n"])
    length = b.Gather(b.Shape(x), b.const(np.int64(0)))
    doubled = b.Mul(length, b.const(np.int64(2)))
    body = b.subgraph()
    i = body.input("i", np.int64, [])
    cond = body.input("cond", np.bool_, [])
    acc = body.input("acc", np.int64, [])
    body.output(body.Identity(cond), "cond_out", np.bool_, [])
    body.output(body.Add(acc, doubled), "acc_out", np.int64, [])
    del i
    (total,) = [b.Loop(b.const(np.int64(3)), None, b.const(np.int64(0)), body=body.graph)]
    b.output(total, "total", np.int64, [])
    sess = onyx.InferenceSession(b.model(), _no_opt())
    assert _functions(sess)
    for n in (4, 7, 4):
        assert int(sess.run(None, {"x": np.ones(n, np.float32)})[0]) == 6 * n


def test_constant_nodes_join_the_region_and_big_ones_stay_correct(monkeypatch):
    """Without optimization, Constant nodes (no inputs) are region members: a Gather reading its index
    from one is cached, and a Constant too big to cache is evaluated on every run."""
    monkeypatch.setattr(shape_cache, "MAX_CACHED_BYTES", 1024)
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["n", 600])
    index = b.Constant(value=np.array(1, np.int64))
    width = b.Unsqueeze(b.Gather(b.Shape(x), index), b.const(np.array([0], np.int64)))
    y = b.Reshape(x, b.Concat(b.const(np.array([-1], np.int64)), width, axis=0))
    big = b.Constant(value=np.arange(600, dtype=np.float32))  # 2400 bytes: over the patched limit
    b.output(b.Add(y, big), "y", np.float32, None)
    sess = onyx.InferenceSession(b.model(), _no_opt())
    plain = [st.node.op_type for st in sess._plan.steps if not isinstance(st.fn, ShapeFunction)]
    assert "Gather" not in plain and "Constant" not in plain
    for n in (2, 3, 2):
        x = R.standard_normal((n, 600)).astype(np.float32)
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], x + np.arange(600, dtype=np.float32))
