"""Models onnxruntime runs although onnx's checker refuses them, and where onyx used to differ.

- IR version 3 files whose initializers are not graph inputs: sessions run them, ``onyx.check`` (and
  ``onyx check``) keeps the strict verdict.
- Model-local functions importing another default-domain opset than the model: the body runs with its
  own imports (skl2onnx's KNNImputer writes opset 16 functions into opset 18 models).
- The binary TreeEnsembleClassifier with one score column applies LOGISTIC as onnxruntime >= 1.26 does.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from tests.runtime._util import assert_same, make_model, onyx_session, ort_session, tensor


def _ir3_model():
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    b = numpy_helper.from_array(np.ones(3, np.float32), "b")
    return make_model(
        [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "b"], ["y"])],
        [tensor("x", TensorProto.FLOAT, [None, 2])],
        [tensor("y", TensorProto.FLOAT, [None, 3])],
        initializers=[w, b],
        opset=7,
        ir_version=3,
    )


def test_ir3_initializers_outside_the_inputs_run_like_onnxruntime():
    model = _ir3_model()
    x = np.array([[1.0, 2.0], [-1.0, 0.5]], np.float32)
    got = onyx_session(model).run(None, {"x": x})
    assert_same(got, ort_session(model).run(None, {"x": x}))
    assert [i.name for i in onyx_session(model).get_inputs()] == ["x"]


def test_ir3_initializers_outside_the_inputs_fail_the_strict_check():
    m = onyx.load(_ir3_model().SerializeToString())
    with pytest.raises(onyx.InvalidGraph, match="initializer 'w' is not a graph input"):
        onyx.check(m)
    onyx.check(m, full=False)  # the sessions' lenient mode


def test_ir3_model_with_the_initializers_listed_passes_both():
    model = _ir3_model()
    model.graph.input.extend([tensor("w", TensorProto.FLOAT, [2, 3]), tensor("b", TensorProto.FLOAT, [3])])
    onyx.check(onyx.load(model.SerializeToString()))


def _function_model(fn_opset: int):
    """RowSum is a function whose ReduceSum takes ``axes`` as an attribute (opset < 13)."""
    fn = helper.make_function(
        "local",
        "RowSum",
        ["x"],
        ["y"],
        [helper.make_node("ReduceSum", ["x"], ["y"], axes=[1], keepdims=0)],
        opset_imports=[helper.make_opsetid("", fn_opset)],
    )
    return make_model(
        [helper.make_node("RowSum", ["x"], ["y"], domain="local")],
        [tensor("x", TensorProto.FLOAT, [3, 4])],
        [tensor("y", TensorProto.FLOAT, None)],
        opset=18,
        extra_opsets={"local": 1},
        functions=[fn],
        ir_version=9,
    )


@pytest.mark.parametrize("level", ["ORT_DISABLE_ALL", "ORT_ENABLE_ALL"])
def test_function_body_runs_with_its_own_opset(level):
    # ReduceSum-11 reads axes from the attribute; at the model's opset 18 it would read an input. (onnxruntime
    # refuses this model: it checks the inlined body against the model's opset.)
    so = onyx.SessionOptions()
    so.graph_optimization_level = getattr(onyx.GraphOptimizationLevel, level)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = onyx_session(_function_model(11), so).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, x.sum(axis=1))


def test_function_opset_mismatch_fails_the_strict_check():
    m = onyx.load(_function_model(11).SerializeToString())
    with pytest.raises(
        onyx.InvalidGraph, match="imports opset 11 of the default domain, the model imports 18"
    ):
        onyx.check(m)
    onyx.check(m, full=False)


def test_knn_imputer_functions_against_onnxruntime_and_sklearn():
    pytest.importorskip("skl2onnx")
    from skl2onnx import to_onnx
    from sklearn.impute import KNNImputer

    r = np.random.default_rng(0)
    X = r.standard_normal((30, 4)).astype(np.float32)
    X[r.random(X.shape) < 0.2] = np.nan
    imp = KNNImputer(n_neighbors=3).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_onnx(imp, X[:1], target_opset=18)
    opsets = {dict((o.domain, o.version) for o in f.opset_import).get("") for f in model.functions}
    assert opsets - {18}, "the converter no longer writes functions of another opset"
    got = onyx_session(model).run(None, {"X": X})[0]
    want = ort_session(model).run(None, {"X": X})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, imp.transform(X), rtol=1e-4, atol=1e-4)


def _binary_tree(weights, post, base=None):
    attrs = dict(
        nodes_treeids=[0, 0, 0],
        nodes_nodeids=[0, 1, 2],
        nodes_featureids=[0, 0, 0],
        nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
        nodes_values=[0.5, 0.0, 0.0],
        nodes_truenodeids=[1, 0, 0],
        nodes_falsenodeids=[2, 0, 0],
        class_treeids=[0, 0],
        class_nodeids=[1, 2],
        class_ids=[0, 0],
        class_weights=list(weights),
        classlabels_int64s=[0, 1],
        post_transform=post,
    )
    if base is not None:
        attrs["base_values"] = base
    return make_model(
        [helper.make_node("TreeEnsembleClassifier", ["x"], ["label", "prob"], domain="ai.onnx.ml", **attrs)],
        [tensor("x", TensorProto.FLOAT, [None, 1])],
        [tensor("label", TensorProto.INT64, [None]), tensor("prob", TensorProto.FLOAT, [None, 2])],
        extra_opsets={"ai.onnx.ml": 3},
    )


@pytest.mark.parametrize("weights", [(0.2, 0.7), (0.0, 0.3), (-1.5, 2.0)])
@pytest.mark.parametrize("base", [None, [0.1], [0.1, -0.3]])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
def test_binary_tree_ensemble_one_score_column(weights, base, post):
    model = _binary_tree(weights, post, base)
    x = np.array([[0.0], [1.0], [0.5]], np.float32)
    got = onyx_session(model).run(None, {"x": x})
    want = ort_session(model).run(None, {"x": x})
    assert_same(got, want)


def test_all_positive_weights_logistic_is_the_sigmoid_pair():
    got = onyx_session(_binary_tree((0.2, 0.7), "LOGISTIC")).run(None, {"x": np.array([[0.0], [1.0]], "f")})
    s = np.array([0.2, 0.7])
    np.testing.assert_allclose(got[1], np.stack([1 / (1 + np.exp(s)), 1 / (1 + np.exp(-s))], 1), rtol=1e-6)
    assert got[0].tolist() == [0, 1]  # the label threshold stays 0.5 on the raw score


def test_gradient_boosting_binary_against_onnxruntime_and_sklearn():
    pytest.importorskip("skl2onnx")
    from skl2onnx import to_onnx
    from sklearn.ensemble import GradientBoostingClassifier

    r = np.random.default_rng(1)
    X = r.standard_normal((200, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    clf = GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_onnx(clf, X[:1], options={"zipmap": False})
    got = onyx_session(model).run(None, {"X": X})
    want = ort_session(model).run(None, {"X": X})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], clf.predict_proba(X), atol=1e-5)


def test_cli_check_keeps_the_strict_verdict(tmp_path, capsys):
    from onyx.cli import main

    path = tmp_path / "old.onnx"
    path.write_bytes(_ir3_model().SerializeToString())
    assert main(["check", str(path)]) != 0
    assert "not a graph input" in capsys.readouterr().err
