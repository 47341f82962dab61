"""The fast paths give what the plain numpy paths give.

- the compiled kernels (onyx.kernels, C) against numpy (ONYX_NO_PERF=1) through whole sessions: tree
  ensembles over every branch mode, NaNs and missing-value tracking, SUM/AVERAGE, float32/float64;
  SVMClassifier probabilities (Platt scaling, pairwise coupling) for one row, a few and many;
- kernels prepared once per session (``fn.prepare``) against the plain kernel call;
- the LSTM's time loop on one thread and with both directions on two;
- Gemm/MatMul's small-product path against numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onyx
from onyx.ops import registry
from tests.ops.nn._conv_util import run_both

ML = "ai.onnx.ml"
MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]


def _model(node, inputs, outputs, ml_opset=3, opset=17):
    g = helper.make_graph([node], "g", inputs, outputs)
    m = helper.make_model(
        g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(ML, ml_opset)]
    )
    m.ir_version = 8
    return m.SerializeToString()


def _random_forest(rng, n_trees, n_features, n_targets, modes, max_depth=5, multi=False):
    """Legacy-encoded random trees: node and leaf attribute lists."""
    a = {k: [] for k in ("tid", "nid", "feat", "mode", "val", "tn", "fn", "miss")}
    w = {k: [] for k in ("tid", "nid", "target", "weight")}
    for t in range(n_trees):
        counter = [0]

        def build(depth, t=t, counter=counter):
            me = counter[0]
            counter[0] += 1
            a["tid"].append(t)
            a["nid"].append(me)
            pos = len(a["nid"]) - 1
            if depth >= max_depth or (depth > 0 and rng.random() < 0.25):
                a["feat"].append(0)
                a["mode"].append("LEAF")
                a["val"].append(0.0)
                a["tn"].append(0)
                a["fn"].append(0)
                a["miss"].append(0)
                size = rng.integers(1, n_targets + 1) if multi else 1
                for k in rng.choice(n_targets, size=size, replace=False):
                    w["tid"].append(t)
                    w["nid"].append(me)
                    w["target"].append(int(k))
                    w["weight"].append(float(np.round(rng.normal(), 3)))
                return me
            a["feat"].append(int(rng.integers(n_features)))
            a["mode"].append(str(rng.choice(modes)))
            a["val"].append(float(np.round(rng.normal(), 1)))
            a["miss"].append(int(rng.random() < 0.3))
            a["tn"].append(0)
            a["fn"].append(0)
            a["tn"][pos] = build(depth + 1)
            a["fn"][pos] = build(depth + 1)
            return me

        build(0)
    return a, w


def _inputs(rng, n, n_features, dtype=np.float32):
    # values on the thresholds' grid so that EQ/NEQ and ties matter, and some NaNs
    x = np.round(rng.normal(size=(n, n_features)), 1).astype(dtype)
    x[rng.random(x.shape) < 0.1] = np.nan
    return x


def _same(a, b, exact=False):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, list):
            assert x == y
            continue
        assert x.dtype == y.dtype and x.shape == y.shape
        if exact or x.dtype.kind not in "fc":
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("modes", [["BRANCH_LEQ"], MODES])
@pytest.mark.parametrize("agg", ["SUM", "AVERAGE"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tree_regressor_compiled_matches_numpy(modes, agg, dtype, monkeypatch):
    rng = np.random.default_rng(len(modes) * 7 + (agg == "SUM") + 2 * (dtype == np.float64))
    a, w = _random_forest(rng, 12, 5, 3, modes, multi=True)
    node = helper.make_node(
        "TreeEnsembleRegressor",
        ["X"],
        ["Y"],
        domain=ML,
        n_targets=3,
        aggregate_function=agg,
        base_values=[0.5, -1.0, 2.0],
        nodes_treeids=a["tid"],
        nodes_nodeids=a["nid"],
        nodes_featureids=a["feat"],
        nodes_modes=a["mode"],
        nodes_values=a["val"],
        nodes_truenodeids=a["tn"],
        nodes_falsenodeids=a["fn"],
        nodes_missing_value_tracks_true=a["miss"],
        target_treeids=w["tid"],
        target_nodeids=w["nid"],
        target_ids=w["target"],
        target_weights=w["weight"],
    )
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    model = _model(
        node,
        [helper.make_tensor_value_info("X", elem, [None, 5])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 3])],
    )
    for n in (1, 7, 300):
        feeds = {"X": _inputs(rng, n, 5, dtype)}
        fast, plain = run_both(model, feeds, monkeypatch)
        # sums in the same order and the same precision: the same bits
        _same(fast, plain, exact=True)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX"])
def test_tree_classifier_compiled_matches_numpy(n_classes, post, monkeypatch):
    rng = np.random.default_rng(n_classes * 10 + len(post))
    a, w = _random_forest(rng, 20, 4, n_classes, MODES, multi=n_classes > 2)
    if n_classes == 2:
        w["target"] = [0] * len(w["target"])  # the usual binary encoding: every weight on class 0
    node = helper.make_node(
        "TreeEnsembleClassifier",
        ["X"],
        ["Y", "Z"],
        domain=ML,
        classlabels_int64s=list(range(n_classes)),
        post_transform=post,
        base_values=[0.25] if n_classes == 2 else None,
        nodes_treeids=a["tid"],
        nodes_nodeids=a["nid"],
        nodes_featureids=a["feat"],
        nodes_modes=a["mode"],
        nodes_values=a["val"],
        nodes_truenodeids=a["tn"],
        nodes_falsenodeids=a["fn"],
        nodes_missing_value_tracks_true=a["miss"],
        class_treeids=w["tid"],
        class_nodeids=w["nid"],
        class_ids=w["target"],
        class_weights=w["weight"],
    )
    model = _model(
        node,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 4])],
        [
            helper.make_tensor_value_info("Y", TensorProto.INT64, [None]),
            helper.make_tensor_value_info("Z", TensorProto.FLOAT, [None, n_classes]),
        ],
    )
    for n in (1, 5, 200):
        fast, plain = run_both(model, {"X": _inputs(rng, n, 4)}, monkeypatch)
        _same(fast, plain, exact=True)


def test_tree_cycle_reported_by_both_paths(monkeypatch):
    node = helper.make_node(
        "TreeEnsembleRegressor",
        ["X"],
        ["Y"],
        domain=ML,
        n_targets=1,
        nodes_treeids=[0, 0, 0],
        nodes_nodeids=[0, 1, 2],
        nodes_featureids=[0, 0, 0],
        nodes_modes=["BRANCH_LEQ", "BRANCH_LEQ", "LEAF"],
        nodes_values=[0.0, 0.0, 0.0],
        nodes_truenodeids=[1, 0, 0],
        nodes_falsenodeids=[2, 0, 0],
        target_treeids=[0],
        target_nodeids=[2],
        target_ids=[0],
        target_weights=[1.0],
    )
    model = _model(
        node,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 1])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 1])],
    )
    for env in ("0", "1"):
        monkeypatch.setenv("ONYX_NO_PERF", env)
        with pytest.raises(onyx.errors.OnyxError, match="cycle"):
            onyx.InferenceSession(model).run(None, {"X": np.full((2, 1), -1.0, np.float32)})


def _svc_model(rng, n_classes, n_features=4, per_class=5, prob=True, kernel="RBF"):
    S = n_classes * per_class
    pairs = n_classes * (n_classes - 1) // 2
    attrs = dict(
        classlabels_ints=list(range(n_classes)),
        kernel_type=kernel,
        kernel_params=[0.3, 0.1, 3.0],
        vectors_per_class=[per_class] * n_classes,
        support_vectors=rng.normal(size=S * n_features).round(3).tolist(),
        coefficients=rng.normal(size=(n_classes - 1) * S).round(3).tolist(),
        rho=rng.normal(size=pairs).round(3).tolist(),
    )
    if prob:
        attrs["prob_a"] = (-rng.uniform(0.5, 3.0, size=pairs)).round(3).tolist()
        attrs["prob_b"] = rng.normal(scale=0.3, size=pairs).round(3).tolist()
    node = helper.make_node("SVMClassifier", ["X"], ["Y", "Z"], domain=ML, **attrs)
    return _model(
        node,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, n_features])],
        [
            helper.make_tensor_value_info("Y", TensorProto.INT64, [None]),
            helper.make_tensor_value_info("Z", TensorProto.FLOAT, [None, None]),
        ],
        ml_opset=1,
    )


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_svc_probabilities_compiled_matches_numpy(n_classes, monkeypatch):
    rng = np.random.default_rng(n_classes)
    model = _svc_model(rng, n_classes)
    # 1 and 3 rows: the Python-float coupling; 40 rows: the vectorised one
    for n in (1, 3, 40):
        x = rng.normal(size=(n, 4)).astype(np.float32)
        fast, plain = run_both(model, {"X": x}, monkeypatch)
        np.testing.assert_array_equal(fast[0], plain[0])
        np.testing.assert_allclose(fast[1], plain[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kernel", ["LINEAR", "POLY", "SIGMOID", "RBF"])
@pytest.mark.parametrize("prob", [True, False])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_svc_one_call_matches_numpy(kernel, prob, n_classes, monkeypatch):
    # up to 16 rows the whole model is one call (kernels.svm.svm_ovo); 17 rows and more take numpy's
    # kernel matrix and kernels.svm.ovo_probabilities
    rng = np.random.default_rng(7)
    model = _svc_model(rng, n_classes, prob=prob, kernel=kernel)
    for n in (1, 2, 16, 17):
        x = rng.normal(size=(n, 4)).astype(np.float32)
        x[0, 1] = 0.0
        fast, plain = run_both(model, {"X": x}, monkeypatch)
        np.testing.assert_array_equal(fast[0], plain[0])
        np.testing.assert_allclose(fast[1], plain[1], rtol=1e-5, atol=1e-6)
        assert fast[1].dtype == np.float32 and fast[1].shape == plain[1].shape


def _plain_kernel_outputs(model_bytes, feeds):
    """Run every node of a one-node model through the plain kernel (no prepare)."""
    m = onyx.load(model_bytes)
    node = m.graph.nodes[0]
    from onyx.runtime.plan import attribute_value

    kernel = registry.lookup(node.op_type, registry.normalize_domain(node.domain), 3 if node.domain else 17)
    kwargs = {k: attribute_value(a) for k, a in node.attributes.items()}
    out = kernel.fn(*[feeds[v.name] for v in node.inputs], **kwargs)
    return list(out) if isinstance(out, tuple) else [out]


def test_prepared_kernels_match_plain_calls(monkeypatch):
    monkeypatch.setenv("ONYX_NO_PERF", "1")
    rng = np.random.default_rng(1)
    cases = []
    node = helper.make_node(
        "LinearClassifier",
        ["X"],
        ["Y", "Z"],
        domain=ML,
        classlabels_strings=["a", "b", "c"],
        coefficients=rng.normal(size=12).tolist(),
        intercepts=[0.1, 0.2, 0.3],
        post_transform="SOFTMAX",
    )
    cases.append((node, [TensorProto.STRING, TensorProto.FLOAT], 4))
    node = helper.make_node("Scaler", ["X"], ["Y"], domain=ML, offset=[1.0, 2.0, 3.0, 4.0], scale=[2.0])
    cases.append((node, [TensorProto.FLOAT], 4))
    node = helper.make_node("Normalizer", ["X"], ["Y"], domain=ML, norm="L2")
    cases.append((node, [TensorProto.FLOAT], 4))
    node = helper.make_node(
        "LinearRegressor", ["X"], ["Y"], domain=ML, coefficients=rng.normal(size=8).tolist(), targets=2
    )
    cases.append((node, [TensorProto.FLOAT], 4))
    node = helper.make_node(
        "SVMRegressor",
        ["X"],
        ["Y"],
        domain=ML,
        kernel_type="POLY",
        kernel_params=[0.5, 1.0, 2.0],
        n_supports=3,
        support_vectors=rng.normal(size=12).tolist(),
        coefficients=[0.5, -1.0, 0.25],
        rho=[0.1],
    )
    cases.append((node, [TensorProto.FLOAT], 4))
    for node, out_types, nf in cases:
        outs = [helper.make_tensor_value_info(o, t, None) for o, t in zip(node.output, out_types)]
        model = _model(node, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, nf])], outs)
        sess = onyx.InferenceSession(model)
        step = sess._plan.steps[0]
        assert step.kwargs == {}, f"{node.op_type} was not prepared"
        for n in (1, 6):
            feeds = {"X": rng.normal(size=(n, nf)).astype(np.float32)}
            got = sess.run(None, feeds)
            want = _plain_kernel_outputs(model, feeds)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype
                if g.dtype == object:
                    assert g.tolist() == w.tolist()
                else:
                    np.testing.assert_array_equal(g, w)


def test_bad_attribute_still_reported_at_run_time():
    # preparing fails (no labels): the plain kernel runs and raises with the node's name
    node = helper.make_node("LinearClassifier", ["X"], ["Y", "Z"], domain=ML, coefficients=[1.0, 2.0])
    model = _model(
        node,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 2])],
        [
            helper.make_tensor_value_info("Y", TensorProto.INT64, None),
            helper.make_tensor_value_info("Z", TensorProto.FLOAT, None),
        ],
    )
    sess = onyx.InferenceSession(model)
    with pytest.raises(onyx.errors.OnyxError, match="classlabels"):
        sess.run(None, {"X": np.ones((1, 2), np.float32)})


def _lstm_model(direction, H=16, I=8):
    D = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(3)
    inits = [
        helper.make_tensor("W", TensorProto.FLOAT, [D, 4 * H, I], rng.normal(size=D * 4 * H * I).tolist()),
        helper.make_tensor("R", TensorProto.FLOAT, [D, 4 * H, H], rng.normal(size=D * 4 * H * H).tolist()),
        helper.make_tensor("B", TensorProto.FLOAT, [D, 8 * H], rng.normal(size=D * 8 * H).tolist()),
    ]
    node = helper.make_node(
        "LSTM", ["X", "W", "R", "B"], ["Y", "Yh", "Yc"], hidden_size=H, direction=direction
    )
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, None, I])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("Y", "Yh", "Yc")],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]).SerializeToString()


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm_threads_match_single_thread(direction):
    model = _lstm_model(direction)
    x = np.random.default_rng(0).normal(size=(7, 3, 8)).astype(np.float32)
    outs = []
    for threads in (1, 2):
        opts = onyx.SessionOptions()
        opts.intra_op_num_threads = threads
        outs.append(onyx.InferenceSession(model, opts).run(None, {"X": x}))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    import onnxruntime as ort

    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"X": x})
    for a, b in zip(outs[0], ref):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("m", [1, 3, 8, 9])
def test_small_gemm_path_matches_numpy(m):
    from onyx.ops.linalg.gemm import gemm
    from onyx.ops.linalg.mat_mul import matmul

    rng = np.random.default_rng(m)
    a = rng.normal(size=(m, 64)).astype(np.float32)
    w = rng.normal(size=(512, 64)).astype(np.float32)
    c = rng.normal(size=(512,)).astype(np.float32)
    y = gemm(a, w, c, 1.0, 1.0, 0, 1)
    assert y.flags.c_contiguous and y.dtype == np.float32
    np.testing.assert_allclose(y, a @ w.T + c, rtol=1e-5, atol=1e-4)
    z = matmul(a, np.ascontiguousarray(w.T))
    assert z.flags.c_contiguous
    np.testing.assert_allclose(z, a @ w.T, rtol=1e-5, atol=1e-4)
    # the BLAS thread count is what it was before (small products run BLAS on one thread, then restore)
    from onyx.kernels.blas_threads import blas_threads, limited

    with limited(2, openblas=2):
        gemm(a, w, c, 1.0, 1.0, 0, 1)
        assert blas_threads() in (2, None)
