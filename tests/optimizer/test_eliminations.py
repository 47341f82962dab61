"""Identity, Dropout, Cast, Expand, Slice, Squeeze/Unsqueeze and Reshape-chain elimination."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.ir.builder import GraphBuilder
from onyx.optimizer.cast_elimination import eliminate_cast
from onyx.optimizer.dropout_elimination import eliminate_dropout
from onyx.optimizer.expand_elimination import eliminate_expand
from onyx.optimizer.identity_elimination import eliminate_identity
from onyx.optimizer.reshape_chain import fold_reshape_chains
from onyx.optimizer.slice_elimination import eliminate_slice
from onyx.optimizer.squeeze_unsqueeze import fold_squeeze_unsqueeze
from tests.optimizer._helpers import check_pass, ops, rand

I64 = np.int64
BIG = np.iinfo(np.int64).max

# -- Identity ------------------------------------------------------------------------------------


def test_identity_chain_and_identity_as_graph_output():
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", np.float32, [3])
        y = b.Identity(b.Identity(b.Relu(x)))
        b.output(b.Identity(b.Neg(y)), "out", np.float32, [3])
        b.output(y, "mid", np.float32, [3])
        return b.model()

    m = check_pass(build, eliminate_identity, {"x": rand(3)})
    assert ops(m) == {"Relu": 1, "Neg": 1}
    assert [v.producer.op_type for v in m.graph.outputs] == ["Neg", "Relu"]


def test_identity_of_a_graph_input_or_of_another_output_stays():
    def build():
        b = GraphBuilder(opset=17)
        x = b.input("x", np.float32, [3])
        r = b.Relu(x)
        b.output(b.Identity(x), "copy", np.float32, [3])
        b.output(r, "r", np.float32, [3])
        b.output(b.Identity(r), "r2", np.float32, [3])
        return b.model()

    m = check_pass(build, eliminate_identity, {"x": rand(3)}, changed=False)
    assert ops(m)["Identity"] == 2


def test_identity_read_by_a_subgraph_is_rewired():
    def build():
        b = GraphBuilder(opset=17)
        cond = b.input("cond", np.bool_, [])
        x = b.input("x", np.float32, [3])
        i = b.Identity(b.Abs(x))
        then = b.subgraph("then")
        then.output(then.Neg(i), "t")
        other = b.subgraph("else")
        other.output(other.Identity(i), "e")
        b.output(b.If(cond, then_branch=then.graph, else_branch=other.graph), "y", np.float32, [3])
        return b.model()

    feeds = [{"cond": np.array(c), "x": rand(3)} for c in (True, False)]
    m = check_pass(build, eliminate_identity, feeds)
    # the else branch outputs an outer value through its Identity: that Identity must stay
    assert ops(m) == {"Abs": 1, "If": 1, "Neg": 1, "Identity": 1}


# -- Dropout -------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [7, 10, 12, 13, 22])
def test_dropout_in_inference_is_removed(opset):
    def build():
        b = GraphBuilder(opset=opset)
        x = b.input("x", np.float32, [4])
        d = b.Dropout(x, ratio=0.3) if opset < 12 else b.Dropout(x, b.const(np.float32(0.3)))
        b.output(b.Relu(d), "y", np.float32, [4])
        return b.model()

    m = check_pass(build, eliminate_dropout, {"x": rand(4)})
    assert "Dropout" not in ops(m)


def test_dropout_with_used_mask_or_training_mode_stays():
    def build():
        b = GraphBuilder(opset=13)
        x = b.input("x", np.float32, [4])
        t = b.input("training", np.bool_, [])
        y, mask = b.Dropout(x, None, b.const(np.bool_(False)), outputs=2)
        b.output(y, "y", np.float32, [4])
        b.output(mask, "mask", np.bool_, [4])
        b.output(b.Dropout(x, b.const(np.float32(0.0)), t), "z", np.float32, [4])
        return b.model()

    check_pass(build, eliminate_dropout, {"x": rand(4), "training": np.array(False)}, changed=False)


def test_dropout_with_constant_false_training_mode_is_removed():
    def build():
        b = GraphBuilder(opset=13)
        x = b.input("x", np.float32, [4])
        d = b.Dropout(x, b.const(np.float32(0.5)), b.const(np.bool_(False)))
        b.output(b.Neg(d), "y", np.float32, [4])
        return b.model()

    m = check_pass(build, eliminate_dropout, {"x": rand(4)})
    assert ops(m) == {"Neg": 1}


# -- Cast ----------------------------------------------------------------------------------------


def test_cast_to_the_same_type_is_removed_and_other_casts_stay():
    def build():
        b = GraphBuilder(opset=19)
        x = b.input("x", np.float32, [3])
        i = b.input("i", np.int64, [3])
        same = b.Cast(x, to=1)
        b.output(b.Add(same, b.Cast(i, to=1)), "y", np.float32, [3])
        j = b.input("j", np.int64, [3])
        b.output(b.Neg(b.CastLike(j, i)), "z", np.int64, [3])
        b.output(b.Cast(x, to=1), "w", np.float32, [3])  # graph output = graph input: kept
        return b.model()

    m = check_pass(
        build, eliminate_cast, {"x": rand(3), "i": np.arange(3, dtype=I64), "j": -np.arange(3, dtype=I64)}
    )
    assert ops(m) == {"Cast": 2, "Add": 1, "Neg": 1}


def test_cast_needs_a_known_input_type():
    b = GraphBuilder(opset=19)
    x = b.input("x", np.float32, [3])
    r = b.Relu(x)  # no type known without shape inference
    b.output(b.Cast(r, to=1), "y", np.float32, [3])
    assert not eliminate_cast(b.model())


# -- Expand --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "xshape, shape, removed",
    [
        ([2, 3], [1, 3], True),
        ([2, 3], [3], True),
        ([2, 3], [1], True),
        (["N", 3], [1, 3], True),
        ([2, 3], [2, 2, 3], False),
        ([2, 1], [2, 3], False),
        (["N", 3], [2, 3], False),
    ],
)
def test_expand_that_changes_nothing_is_removed(xshape, shape, removed):
    def build():
        b = GraphBuilder(opset=13)
        x = b.input("x", np.float32, xshape)
        b.output(b.Neg(b.Expand(x, b.const(np.array(shape, I64)))), "y", np.float32, None)
        return b.model()

    dims = [2 if d == "N" else d for d in xshape]
    m = check_pass(build, eliminate_expand, {"x": rand(*dims)}, changed=removed)
    assert ("Expand" in ops(m)) is not removed


# -- Slice ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "starts, ends, axes, steps, removed",
    [
        ([0], [BIG], [1], None, True),
        ([0, 0], [BIG, 4], None, [1, 1], True),
        ([-3], [BIG], [0], None, True),
        ([-10], [2**31 - 1], [-1], None, True),
        ([1], [BIG], [1], None, False),
        ([0], [3], [1], None, False),
        ([0], [BIG], [1], [2], False),
        ([0], [BIG], [1], [-1], False),
    ],
)
def test_slice_taking_everything_is_removed(starts, ends, axes, steps, removed):
    def build():
        b = GraphBuilder(opset=13)
        x = b.input("x", np.float32, [3, 4])
        args = [x, b.const(np.array(starts, I64)), b.const(np.array(ends, I64))]
        if axes is not None or steps is not None:
            args.append(b.const(np.array(axes if axes is not None else range(len(starts)), I64)))
        if steps is not None:
            args.append(b.const(np.array(steps, I64)))
        b.output(b.Neg(b.Slice(*args)), "y", np.float32, None)
        return b.model()

    m = check_pass(build, eliminate_slice, {"x": rand(3, 4)}, changed=removed)
    assert ("Slice" in ops(m)) is not removed


def test_slice_opset_1_attributes():
    def build():
        b = GraphBuilder(opset=9)
        x = b.input("x", np.float32, [3, 4])
        y = b.Slice(x, starts=[0, 0], ends=[BIG, 4], axes=[0, 1])
        b.output(b.Neg(b.Slice(y, starts=[1], ends=[3], axes=[1])), "y", np.float32, None)
        return b.model()

    m = check_pass(build, eliminate_slice, {"x": rand(3, 4)})
    assert ops(m)["Slice"] == 1


# -- Squeeze / Unsqueeze -------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize(
    "xshape, a1, a2, removed",
    [
        ([3, 4], [0, 2], [0, 2], True),
        ([3, 4], [-1], [2], True),
        ([3, 4], [0, 3], [3, 0], True),
        ([3, 4], [0, -1], [-4, 3], True),
        ([3, 1], [0], [2], False),
    ],
)
def test_unsqueeze_then_squeeze(opset, xshape, a1, a2, removed):
    def axes(b, a):
        return {"axes": a} if opset < 13 else {}, ([b.const(np.array(a, I64))] if opset >= 13 else [])

    def build():
        b = GraphBuilder(opset=opset)
        x = b.input("x", np.float32, xshape)
        k1, i1 = axes(b, a1)
        k2, i2 = axes(b, a2)
        b.output(b.Neg(b.Squeeze(b.Unsqueeze(x, *i1, **k1), *i2, **k2)), "y", np.float32, None)
        return b.model()

    m = check_pass(build, fold_squeeze_unsqueeze, {"x": rand(*xshape)}, changed=removed)
    assert ("Squeeze" in ops(m)) is not removed


def test_squeeze_then_unsqueeze_needs_unit_dims():
    def build(dims):
        b = GraphBuilder(opset=13)
        x = b.input("x", np.float32, dims)
        ax = b.const(np.array([1], I64))
        b.output(b.Neg(b.Unsqueeze(b.Squeeze(x, ax), ax)), "y", np.float32, None)
        return b.model()

    m = check_pass(lambda: build([3, 1, 2]), fold_squeeze_unsqueeze, {"x": rand(3, 1, 2)})
    assert ops(m) == {"Neg": 1, "Squeeze": 1} or ops(m) == {"Neg": 1}
    assert not fold_squeeze_unsqueeze(build([3, "k", 2]))


# -- Reshape chains ------------------------------------------------------------------------------


def test_reshape_chain_collapses():
    def build():
        b = GraphBuilder(opset=14)
        x = b.input("x", np.float32, ["N", 6])
        r = b.Reshape(b.Reshape(x, b.const(np.array([-1, 2, 3], I64))), b.const(np.array([-1, 3, 2], I64)))
        b.output(b.Neg(r), "y", np.float32, None)
        return b.model()

    m = check_pass(build, fold_reshape_chains, [{"x": rand(n, 6)} for n in (1, 4)])
    assert ops(m) == {"Reshape": 1, "Neg": 1}


def test_reshape_chain_with_zero_dims_stays_unless_allowzero():
    def build(allowzero):
        b = GraphBuilder(opset=14)
        x = b.input("x", np.float32, [4, 6])
        inner = b.Reshape(x, b.const(np.array([2, 12], I64)))
        if allowzero:
            r = b.Reshape(inner, b.const(np.array([3, 8], I64)), allowzero=1)
        else:
            r = b.Reshape(inner, b.const(np.array([0, 3, -1], I64)))
        b.output(b.Neg(r), "y", np.float32, None)
        return b.model()

    check_pass(lambda: build(False), fold_reshape_chains, {"x": rand(4, 6)}, changed=False)
    m = check_pass(lambda: build(True), fold_reshape_chains, {"x": rand(4, 6)})
    assert ops(m) == {"Reshape": 1, "Neg": 1}


def test_reshape_to_the_same_shape_is_removed():
    def build():
        b = GraphBuilder(opset=14)
        x = b.input("x", np.float32, ["N", 6])
        b.output(b.Neg(b.Reshape(x, b.const(np.array([-1, 6], I64)))), "y", np.float32, None)
        return b.model()

    m = check_pass(build, fold_reshape_chains, [{"x": rand(n, 6)} for n in (0, 3)])
    assert ops(m) == {"Neg": 1}


def test_identity_in_a_function_body_keeps_the_function_output():
    from onyx.ir.model import Function, Node, Value

    def build():
        b = GraphBuilder(opset=17, opsets={"local": 1})
        x = b.input("x", np.float32, [3])
        b.output(b.op("F", x, domain="local"), "y", np.float32, [3])
        m = b.model()
        f = Function("local", "F")
        f.opset_imports = [("", 17)]
        fx, a, i, fy = Value("fx"), Value("a"), Value("i"), Value("fy")
        f.inputs, f.outputs = [fx], [fy]
        f.graph.append_node(Node("Abs", [fx], [a]))
        f.graph.append_node(Node("Identity", [a], [i]))
        f.graph.append_node(Node("Identity", [i], [fy]))
        m.functions.append(f)
        return m

    m = check_pass(build, eliminate_identity, {"x": rand(3)})
    f = m.functions[0]
    assert [n.op_type for n in f.nodes] == ["Abs"] and [v.name for v in f.outputs] == ["fy"]


def test_shapes_inside_loop_bodies_are_not_trusted():
    """A loop-carried value declared [1, 3] grows each iteration: Slice(v, 0:3) is not a no-op."""

    def build():
        b = GraphBuilder(opset=13)
        v0 = b.input("v0", np.float32, [1, 3])
        body = b.subgraph("body")
        body.input("i", np.int64, [])
        cond = body.input("cond_in", np.bool_, [])
        v = body.input("v", np.float32, [1, 3])
        k = [body.const(np.array([a], I64)) for a in (0, 3, 1)]
        s = body.Slice(v, *k)
        body.output(body.Identity(cond), "cond_out")
        body.output(body.Concat(v, s, axis=1), "v_out")
        trip = b.const(np.int64(3))
        b.output(b.Loop(trip, b.const(np.bool_(True)), v0, body=body.graph), "y", np.float32, [1, None])
        return b.model()

    m = check_pass(build, eliminate_slice, {"v0": rand(1, 3)}, changed=False)
    assert ops(m)["Slice"] == 1


# -- Normalizer after a softmax LinearClassifier ---------------------------------------------------


def _classifier(post, rows, norm="L1", z_also_out=False):
    def build():
        b = GraphBuilder(opset=17, opsets={"ai.onnx.ml": 1})
        x = b.input("x", np.float32, [None, 4])
        coef = rand(rows, 4, seed=rows).reshape(-1).tolist()
        labels = [0, 1] if rows == 1 else list(range(rows))
        y, z = b.op(
            "LinearClassifier",
            x,
            domain="ai.onnx.ml",
            outputs=2,
            coefficients=coef,
            intercepts=rand(rows, seed=9).tolist(),
            classlabels_ints=labels,
            post_transform=post,
        )
        p = b.op("Normalizer", z, domain="ai.onnx.ml", norm=norm)
        b.output(y, "label", np.int64, [None])
        b.output(p, "probabilities", np.float32, [None, 2 if rows == 1 else rows])
        if z_also_out:
            b.output(z, "scores", np.float32, [None, 2 if rows == 1 else rows])
        return b.model()

    return build


@pytest.mark.parametrize("post", ["SOFTMAX", "SOFTMAX_ZERO"])
def test_l1_normalizer_of_softmax_probabilities_is_removed(post):
    from onyx.optimizer.normalizer_elimination import eliminate_softmax_normalizer

    feeds = {"x": rand(5, 4, seed=3) * 3}
    m = check_pass(_classifier(post, 3), eliminate_softmax_normalizer, feeds)
    assert ops(m) == {"LinearClassifier": 1}
    assert [v.name for v in m.graph.outputs] == ["label", "probabilities"]


def test_normalizer_between_two_graph_outputs_stays():
    """Scores and probabilities both graph outputs: one value cannot carry both names."""
    from onyx.optimizer.normalizer_elimination import eliminate_softmax_normalizer

    feeds = {"x": rand(5, 4, seed=3)}
    m = check_pass(
        _classifier("SOFTMAX", 3, z_also_out=True), eliminate_softmax_normalizer, feeds, changed=False
    )
    assert ops(m)["Normalizer"] == 1


@pytest.mark.parametrize(
    "post,rows,norm",
    [
        ("LOGISTIC", 3, "L1"),
        ("NONE", 3, "L1"),
        ("SOFTMAX", 3, "L2"),
        ("SOFTMAX", 3, "MAX"),
        ("SOFTMAX", 1, "L1"),
    ],
    ids=["ovr-logistic", "raw-scores", "L2", "MAX", "binary-one-row"],
)
def test_normalizer_that_changes_values_stays(post, rows, norm):
    from onyx.optimizer.normalizer_elimination import eliminate_softmax_normalizer

    feeds = {"x": rand(5, 4, seed=4) * 3}
    m = check_pass(_classifier(post, rows, norm), eliminate_softmax_normalizer, feeds, changed=False)
    assert ops(m)["Normalizer"] == 1


def test_skl2onnx_multinomial_logistic_regression_loses_its_normalizer():
    """The real exporter's graph: optimised at the default level it runs one node and still matches
    onnxruntime and scikit-learn's probabilities."""
    skl = pytest.importorskip("sklearn")
    pytest.importorskip("skl2onnx")
    import onnxruntime as ort
    from skl2onnx import to_onnx
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import onyx

    del skl
    x, y = load_iris(return_X_y=True)
    x = x.astype(np.float32)
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(x, y)
    opsets = {"": 17, "ai.onnx.ml": 3}
    data = to_onnx(clf, x[:1], options={"zipmap": False}, target_opset=opsets).SerializeToString()
    sess = onyx.InferenceSession(data)
    assert "Normalizer" not in {n.op_type for n in sess._plan.graph.nodes}
    got = sess.run(None, {"X": x})
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"X": x})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[1], clf.predict_proba(x), rtol=1e-5, atol=1e-6)
