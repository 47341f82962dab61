"""scikit-learn models converted with skl2onnx: onyx's kernels (through the harness) against onnxruntime.

Models are trained in the test on data scikit-learn ships (iris, diabetes, breast cancer, digits) or on
random data; nothing is downloaded. Graphs that need an operator outside the ml/quant/rnn families that
onyx does not have yet are skipped, naming the operator.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnxruntime as ort
import pytest

skl2onnx = pytest.importorskip("skl2onnx")
from skl2onnx import convert_sklearn  # noqa: E402
from skl2onnx.common.data_types import (  # noqa: E402
    DictionaryType,
    FloatTensorType,
    Int64TensorType,
    StringTensorType,
)
from sklearn import datasets  # noqa: E402

from onyx.errors import NotImplemented as OnyxNotImplemented  # noqa: E402
from tests.conformance.harness import run_model  # noqa: E402

warnings.filterwarnings("ignore")


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: v for i, v in zip(sess.get_inputs(), feeds)})


def _onyx(model, feeds):
    try:
        return run_model(model, feeds)
    except OnyxNotImplemented as e:
        if "ai.onnx.ml" in str(e):
            raise
        pytest.skip(f"needs an operator from another family: {e}")


def check(model, feeds, rtol=1e-4, atol=1e-5, label_mismatch_ok=0):
    exp = _ort(model, feeds)
    got = _onyx(model, feeds)
    assert len(got) == len(exp)
    for k, (g, e) in enumerate(zip(got, exp)):
        if isinstance(e, list):  # ZipMap: a list of dicts
            assert isinstance(g, list) and len(g) == len(e)
            for gd, ed in zip(g, e):
                assert set(gd) == set(ed)
                for key in ed:
                    np.testing.assert_allclose(gd[key], ed[key], rtol=rtol, atol=atol)
            continue
        g = np.asarray(g)
        assert g.dtype == e.dtype, f"output {k}: {g.dtype} != {e.dtype}"
        assert g.shape == e.shape, f"output {k}: {g.shape} != {e.shape}"
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"output {k}")
        else:
            diff = int(np.sum(g != e))
            assert diff <= label_mismatch_ok, f"output {k}: {diff} labels differ"


def convert(model, X, *, zipmap=False, target_opset=None, initial_types=None):
    if initial_types is None:
        initial_types = [("X", FloatTensorType([None, X.shape[1]]))]
    options = {id(model): {"zipmap": False}} if not zipmap and hasattr(model, "predict_proba") else None
    kw = {"target_opset": target_opset} if target_opset else {}
    return convert_sklearn(model, initial_types=initial_types, options=options, **kw)


@pytest.fixture
def hist_fix(monkeypatch):
    """skl2onnx 1.20 passes numpy bools for nodes_missing_value_tracks_true, which onnx rejects."""
    import skl2onnx.common.tree_ensemble as te

    orig = te.add_node

    def add_node(*args, **kwargs):
        if "nodes_missing_value_tracks_true" in kwargs:
            kwargs["nodes_missing_value_tracks_true"] = int(kwargs["nodes_missing_value_tracks_true"])
        return orig(*args, **kwargs)

    monkeypatch.setattr(te, "add_node", add_node)


@pytest.fixture(scope="module")
def iris():
    X, y = datasets.load_iris(return_X_y=True)
    return X.astype(np.float32), y


@pytest.fixture(scope="module")
def cancer():
    X, y = datasets.load_breast_cancer(return_X_y=True)
    return X.astype(np.float32), y


@pytest.fixture(scope="module")
def diabetes():
    X, y = datasets.load_diabetes(return_X_y=True)
    return X.astype(np.float32), y.astype(np.float32)


# ---- trees ------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_classes", [2, 3])
def test_random_forest_classifier(iris, cancer, n_classes):
    from sklearn.ensemble import RandomForestClassifier

    X, y = cancer if n_classes == 2 else iris
    m = RandomForestClassifier(n_estimators=12, max_depth=6, random_state=0).fit(X, y)
    check(convert(m, X), [X])


def test_random_forest_regressor(diabetes):
    from sklearn.ensemble import RandomForestRegressor

    X, y = diabetes
    m = RandomForestRegressor(n_estimators=10, max_depth=7, random_state=0).fit(X, y)
    check(convert(m, X), [X], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_gradient_boosting_classifier(iris, cancer, n_classes):
    from sklearn.ensemble import GradientBoostingClassifier

    X, y = cancer if n_classes == 2 else iris
    m = GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0).fit(X, y)
    check(convert(m, X), [X])


def test_gradient_boosting_regressor(diabetes):
    from sklearn.ensemble import GradientBoostingRegressor

    X, y = diabetes
    m = GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0).fit(X, y)
    check(convert(m, X), [X], atol=1e-3)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_hist_gradient_boosting_classifier(iris, cancer, n_classes, hist_fix):
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y = cancer if n_classes == 2 else iris
    X = X.copy()
    X[::7, 1] = np.nan  # missing values take the learned direction
    m = HistGradientBoostingClassifier(max_iter=15, random_state=0).fit(X, y)
    check(convert(m, X), [X])


def test_hist_gradient_boosting_regressor(diabetes, hist_fix):
    from sklearn.ensemble import HistGradientBoostingRegressor

    X, y = diabetes
    X = X.copy()
    X[::5, 2] = np.nan
    m = HistGradientBoostingRegressor(max_iter=20, random_state=0).fit(X, y)
    check(convert(m, X), [X], atol=1e-3)


def test_decision_tree_string_labels_zipmap(iris):
    from sklearn.tree import DecisionTreeClassifier

    X, y = iris
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    m = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, names)
    check(convert(m, X, zipmap=True), [X])


def test_tree_ensemble_v5_from_regressor(diabetes):
    """The same forest as TreeEnsembleRegressor (ml opset 3) and as TreeEnsemble (ml opset 5)."""
    from sklearn.ensemble import RandomForestRegressor

    X, y = diabetes
    m = RandomForestRegressor(n_estimators=5, max_depth=5, random_state=0).fit(X, y)
    onx = convert(m, X, target_opset={"": 21, "ai.onnx.ml": 5})
    if not any(n.op_type == "TreeEnsemble" for n in onx.graph.node):
        pytest.skip("this skl2onnx does not emit TreeEnsemble")
    check(onx, [X], atol=1e-3)


# ---- linear models and SVMs ----------------------------------------------------------------------


@pytest.mark.parametrize("n_classes", [2, 3])
def test_logistic_regression(iris, cancer, n_classes):
    from sklearn.linear_model import LogisticRegression

    X, y = cancer if n_classes == 2 else iris
    m = LogisticRegression(max_iter=3000).fit(X, y)
    check(convert(m, X), [X])


def test_logistic_regression_zipmap(iris):
    from sklearn.linear_model import LogisticRegression

    X, y = iris
    m = LogisticRegression(max_iter=500).fit(X, y)
    check(convert(m, X, zipmap=True), [X])


def test_linear_regression(diabetes):
    from sklearn.linear_model import LinearRegression

    X, y = diabetes
    check(convert(LinearRegression().fit(X, y), X), [X], atol=1e-3)


def test_linear_svc_binary(cancer):
    from sklearn.svm import LinearSVC

    X, y = cancer
    Xs = (X - X.mean(0)) / X.std(0)
    m = LinearSVC(max_iter=5000).fit(Xs, y)
    check(convert(m, Xs), [Xs.astype(np.float32)])


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly", "sigmoid"])
@pytest.mark.parametrize("probability", [False, True])
def test_svc_multiclass(iris, kernel, probability):
    from sklearn.svm import SVC

    X, y = iris
    m = SVC(kernel=kernel, probability=probability, random_state=0, gamma=0.1).fit(X, y)
    check(convert(m, X), [X], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("probability", [False, True])
def test_svc_binary(iris, probability):
    from sklearn.svm import SVC

    X, y = iris
    X, y = X[50:], y[50:] - 1
    m = SVC(probability=probability, random_state=0).fit(X, y)
    check(convert(m, X), [X], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_svr(diabetes, kernel):
    from sklearn.svm import SVR

    X, y = diabetes
    m = SVR(kernel=kernel, C=10.0).fit(X, y)
    check(convert(m, X), [X], rtol=1e-4, atol=1e-3)


def test_one_class_svm(iris):
    from sklearn.svm import OneClassSVM

    X, _ = iris
    m = OneClassSVM(gamma=0.1).fit(X)
    check(convert(m, X), [X], rtol=1e-4, atol=1e-4)


# ---- preprocessing pipelines -------------------------------------------------------------------


def test_scaler_normalizer_pipeline(iris):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer, StandardScaler

    X, y = iris
    for norm in ("l1", "l2", "max"):
        m = make_pipeline(StandardScaler(), Normalizer(norm=norm), LogisticRegression(max_iter=500)).fit(X, y)
        check(convert(m, X), [X])


def test_imputer_pipeline(diabetes):
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline

    X, y = diabetes
    X = X.copy()
    X[::3, 1] = np.nan
    m = make_pipeline(SimpleImputer(strategy="mean"), LinearRegression()).fit(X, y)
    check(convert(m, X), [X], atol=1e-3)


def test_one_hot_encoder_strings_and_ints():
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    S = rng.choice(["red", "green", "blue"], size=(20, 1)).astype(object)
    m = OneHotEncoder(handle_unknown="ignore").fit(S)
    onx = convert(m, S, initial_types=[("X", StringTensorType([None, 1]))])
    T = np.array([["red"], ["blue"], ["purple"]], dtype=object)
    check(onx, [T])
    Xi = rng.integers(0, 4, size=(20, 2)).astype(np.int64)
    m = OneHotEncoder(handle_unknown="ignore").fit(Xi)
    onx = convert(m, Xi, initial_types=[("X", Int64TensorType([None, 2]))])
    check(onx, [np.array([[0, 1], [3, 9]], dtype=np.int64)])


def test_dict_vectorizer():
    from sklearn.feature_extraction import DictVectorizer

    data = [{"a": 1.0, "b": 2.0}, {"b": 3.0, "c": 4.0}]
    m = DictVectorizer(sparse=False).fit(data)
    onx = convert(m, None, initial_types=[("X", DictionaryType(StringTensorType([1]), FloatTensorType([1])))])
    check(onx, [{"a": 5.0, "c": 1.5, "zz": 2.0}])
