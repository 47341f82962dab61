"""skl2onnx pipelines that carry com.microsoft ops (Tokenizer, MurmurHash3, CDist) or opset-mixed functions,
end to end against onnxruntime and scikit-learn."""

from __future__ import annotations

import warnings

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

import onyx

pytest.importorskip("skl2onnx")
from skl2onnx import to_onnx  # noqa: E402
from skl2onnx.common.data_types import StringTensorType  # noqa: E402

CORPUS = np.array(
    [
        "This is the first document.",
        "This document is the second document.",
        "And this is the third one.",
        "Is this the first document?",
        "Numbers 12 and 345, under_scores and CAPS!",
        "",
    ]
)
UNSEEN = np.array(["A brand new document, the first of its kind.", "one two three", "?!"])


def _convert(model, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_onnx(model, **kw)


def _ort_session(onx) -> ort.InferenceSession:
    # onnxruntime's StringNormalizer builds the locale it is given (en_US.UTF-8 by default), which this
    # machine may lack; C.UTF-8 lower-cases ASCII the same way (onyx ignores the attribute)
    for node in onx.graph.node:
        if node.op_type == "StringNormalizer" and not any(a.name == "locale" for a in node.attribute):
            node.attribute.append(helper.make_attribute("locale", "C.UTF-8"))
    so = ort.SessionOptions()
    so.log_severity_level = 4
    return ort.InferenceSession(onx.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _text_model(vectorizer, options=None):
    vectorizer.fit(CORPUS)
    options = options if isinstance(options, dict) else None
    onx = _convert(
        vectorizer,
        initial_types=[("text", StringTensorType([None, 1]))],
        target_opset={"": 17, "ai.onnx.ml": 3},
        options={id(vectorizer): options} if options else None,
    )
    return vectorizer, onx


def _vectorizers():
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    return [
        ("count-word", CountVectorizer(), None),
        ("count-word-12", CountVectorizer(ngram_range=(1, 2)), None),
        ("count-stop", CountVectorizer(stop_words=["the", "is", "and"]), None),
        # skl2onnx drops stop words after tokenizing, scikit-learn before joining n-grams: onnx only
        ("count-stop-13", CountVectorizer(stop_words=["the", "is", "and"], ngram_range=(1, 3)), "onnx"),
        ("count-token-pattern", CountVectorizer(token_pattern=r"\b\w\w+\b"), None),
        ("count-separators", CountVectorizer(), {"separators": [" ", "[.]", "\\?", ",", ";", ":", "!"]}),
        ("tfidf-word", TfidfVectorizer(), None),
        ("tfidf-char-12", TfidfVectorizer(analyzer="char", ngram_range=(1, 2)), None),
        ("tfidf-char-3", TfidfVectorizer(analyzer="char", ngram_range=(3, 3), lowercase=False), None),
        ("tfidf-l1", TfidfVectorizer(norm="l1", ngram_range=(1, 2)), None),
        ("tfidf-sublinear", TfidfVectorizer(sublinear_tf=True), "onnx"),  # skl2onnx: log(tf) differs
    ]


@pytest.mark.parametrize("name,vectorizer,options", _vectorizers(), ids=[v[0] for v in _vectorizers()])
def test_text_vectorizers(name, vectorizer, options):
    vectorizer, onx = _text_model(vectorizer, options)
    exact = options is None
    for text in (CORPUS, UNSEEN):
        feed = {"text": text.reshape(-1, 1)}
        got = onyx.InferenceSession(onx.SerializeToString()).run(None, feed)[0]
        want = _ort_session(onx).run(None, feed)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        if exact:  # "onnx" and separators: skl2onnx differs from scikit-learn, knowingly
            np.testing.assert_allclose(got, vectorizer.transform(text).toarray(), rtol=1e-4, atol=1e-5)


def test_feature_hasher():
    from sklearn.feature_extraction import FeatureHasher

    X = np.array([["cat", "dog"], ["bird", "cat"], ["h\xe9llo", "x"], ["", "a somewhat longer string"]])
    fh = FeatureHasher(n_features=16, input_type="string").fit(X)
    onx = _convert(fh, initial_types=[("X", StringTensorType([None, 2]))])
    got = onyx.InferenceSession(onx.SerializeToString()).run(None, {"X": X})[0]
    np.testing.assert_array_equal(got, _ort_session(onx).run(None, {"X": X})[0])
    np.testing.assert_array_equal(got, fh.transform(X).toarray())


@pytest.mark.parametrize("kind", ["KNeighborsRegressor", "KNeighborsClassifier"])
def test_knn_with_cdist(kind):
    from sklearn import neighbors

    r = np.random.default_rng(0)
    X = r.standard_normal((60, 4)).astype(np.float32)
    y = X.sum(1)
    model = getattr(neighbors, kind)(n_neighbors=3)
    model.fit(X, y if kind.endswith("Regressor") else (y > 0).astype(int))
    onx = _convert(model, X=X[:1], options={id(model): {"optim": "cdist"}})
    assert any(n.op_type == "CDist" for n in onx.graph.node)
    Xt = r.standard_normal((25, 4)).astype(np.float32)
    got = onyx.InferenceSession(onx.SerializeToString()).run(None, {"X": Xt})
    want = _ort_session(onx).run(None, {"X": Xt})
    for g, w in zip(got, want):
        if isinstance(w, list):  # ZipMap's probabilities
            assert len(g) == len(w) and all(a.keys() == b.keys() for a, b in zip(g, w))
            assert all(np.isclose(a[k], b[k], atol=1e-6) for a, b in zip(g, w) for k in a)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0].reshape(-1), model.predict(Xt), rtol=1e-5, atol=1e-5)


def test_gaussian_process_with_cdist():
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF

    r = np.random.default_rng(0)
    X = r.standard_normal((40, 3))
    gp = GaussianProcessRegressor(kernel=RBF(length_scale=1.5), alpha=1e-2).fit(X, np.sin(X).sum(1))
    onx = _convert(gp, X=X[:1], options={id(gp): {"optim": "cdist"}})
    assert any(n.op_type == "CDist" for n in onx.graph.node)
    Xt = r.standard_normal((10, 3))
    got = onyx.InferenceSession(onx.SerializeToString()).run(None, {"X": Xt})[0]
    want = _ort_session(onx).run(None, {"X": Xt})[0]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.reshape(-1), gp.predict(Xt), rtol=1e-7, atol=1e-7)


def test_knn_imputer():
    from sklearn.impute import KNNImputer

    r = np.random.default_rng(0)
    X = r.standard_normal((30, 4)).astype(np.float32)
    X[r.random(X.shape) < 0.2] = np.nan
    imp = KNNImputer(n_neighbors=3).fit(X)
    onx = _convert(imp, X=X[:1], target_opset=18)
    got = onyx.InferenceSession(onx.SerializeToString()).run(None, {"X": X})[0]
    np.testing.assert_allclose(got, _ort_session(onx).run(None, {"X": X})[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, imp.transform(X), rtol=1e-4, atol=1e-4)
