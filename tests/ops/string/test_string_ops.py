"""String kernels: StringConcat, StringNormalizer, StringSplit, RegexFullMatch, TfIdfVectorizer.

onnxruntime is the oracle where it helps: it matches with RE2, so it checks the RE2 translation.
"""

from __future__ import annotations

import numpy as np
import pytest

from onyx.errors import InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ops import registry


def k(op_type, opset=20):
    return registry.lookup(op_type, "", opset).fn


def S(*items, shape=None):
    a = np.array(list(items), dtype=object)
    return a.reshape(shape) if shape else a


def ort_run(op_type, inputs, outputs, opset=20, **attrs):
    import onnxruntime as ort
    from onnx import TensorProto, helper

    def vi(name, arr):
        tp = TensorProto.STRING if arr.dtype == object else helper.np_dtype_to_tensor_dtype(arr.dtype)
        return helper.make_tensor_value_info(name, tp, list(arr.shape))

    names = [f"x{i}" for i in range(len(inputs))]
    node = helper.make_node(op_type, names, [f"y{i}" for i in range(len(outputs))], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [vi(n, a) for n, a in zip(names, inputs)],
        [helper.make_tensor_value_info(f"y{i}", t, None) for i, t in enumerate(outputs)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, dict(zip(names, inputs)))


# ---------------------------------------------------------------- StringConcat


def test_concat_broadcast_and_unicode():
    out = k("StringConcat")(S("a", "é", ""), S("x"))
    assert out.dtype == object and out.tolist() == ["ax", "éx", "x"]
    out = k("StringConcat")(S("a", "b", shape=(2, 1)), S("1", "2", "3"))
    assert out.shape == (2, 3) and out[1, 2] == "b3"
    out = k("StringConcat")(np.array("p", dtype=object), np.array("q", dtype=object))
    assert out.shape == () and out.item() == "pq"
    assert k("StringConcat")(S(), S("a")).shape == (0,)


def test_concat_errors():
    with pytest.raises(InvalidArgument, match="broadcast"):
        k("StringConcat")(S("a", "b"), S("a", "b", "c"))
    with pytest.raises(InvalidArgument, match="string"):
        k("StringConcat")(np.zeros(2), S("a", "b"))


# ---------------------------------------------------------------- StringNormalizer


def test_normalizer_cases_and_stopwords():
    f = k("StringNormalizer", 10)
    x = S("Monday", "tuesday", "straße", "İstanbul")
    assert f(x, case_change_action="UPPER").tolist() == ["MONDAY", "TUESDAY", "STRAßE", "İSTANBUL"]
    assert f(x, case_change_action="LOWER").tolist()[:3] == ["monday", "tuesday", "straße"]
    assert f(x, stopwords=["monday"]).tolist() == ["tuesday", "straße", "İstanbul"]
    assert f(x, stopwords=["monday"], is_case_sensitive=1).tolist() == x.tolist()
    out = f(S("a", "b", shape=(1, 2)), stopwords=["A", "B"])
    assert out.shape == (1, 1) and out.tolist() == [[""]]
    assert f(S("a"), stopwords=["a"]).tolist() == [""]
    assert f(x, locale="en_US").tolist() == x.tolist()


def test_normalizer_unicode_stopwords_case_insensitive():
    # onnxruntime cannot be the oracle here: it needs an installed en_US.UTF-8 locale
    x = S("Monday", "TUESDAY", "Weds", "été", shape=(1, 4))
    f = k("StringNormalizer", 10)
    assert f(x, case_change_action="LOWER", stopwords=["tuesday"]).tolist() == [["monday", "weds", "été"]]
    assert f(x, case_change_action="UPPER", stopwords=["ÉTÉ", "weds"]).tolist() == [["MONDAY", "TUESDAY"]]
    assert f(x, stopwords=["ÉTÉ"], is_case_sensitive=1).tolist() == x.tolist()


def test_normalizer_rejects_bad_shape_and_action():
    with pytest.raises(InvalidArgument, match="shape"):
        k("StringNormalizer", 10)(S("a", "b", shape=(2, 1)))
    with pytest.raises(InvalidArgument, match="case_change_action"):
        k("StringNormalizer", 10)(S("a"), case_change_action="TITLE")


# ---------------------------------------------------------------- StringSplit


def test_split_shapes_and_padding():
    y, z = k("StringSplit")(S("a,b", "c", "", ",x,", shape=(2, 2)), delimiter=",")
    assert y.shape == (2, 2, 3) and z.shape == (2, 2) and z.dtype == np.int64
    assert y.tolist() == [[["a", "b", ""], ["c", "", ""]], [["", "", ""], ["", "x", ""]]]
    assert z.tolist() == [[2, 1], [0, 3]]
    y, z = k("StringSplit")(S("a  b c", "   "), maxsplit=1)
    assert y.tolist() == [["a", "b c"], ["", ""]] and z.tolist() == [2, 0]
    y, z = k("StringSplit")(S("a--b--c"), delimiter="--", maxsplit=1)
    assert y.tolist() == [["a", "b--c"]]
    y, z = k("StringSplit")(np.array("x y", dtype=object))
    assert y.shape == (2,) and z.shape == ()


def test_split_matches_onnxruntime():
    from onnx import TensorProto

    x = S("one  two", " lead", "", "a;b;;c", "no-delims-here")
    for attrs in (dict(), dict(delimiter=";"), dict(delimiter=";", maxsplit=1), dict(maxsplit=0)):
        ey, ez = ort_run("StringSplit", [x], [TensorProto.STRING, TensorProto.INT64], **attrs)
        y, z = k("StringSplit")(x, **attrs)
        assert y.tolist() == ey.tolist() and z.tolist() == ez.tolist(), attrs


# ---------------------------------------------------------------- RegexFullMatch

RE2_CASES = [
    (r"\d+", ["123", "١٢٣", "12a", ""]),
    (r"\w+", ["abc_1", "héllo", ""]),
    (r"a\s+b", ["a \t b", "a\u00a0b", "a\x0bb"]),
    (r"[[:alpha:]]+[[:digit:]]", ["abc1", "ab", "é1"]),
    (r"[[:^digit:]x]+", ["abx", "a1"]),
    (r"abc$", ["abc", "abc\n"]),
    (r"(?m)abc$\n", ["abc\n"]),
    (r"\Qa.b\E+", ["a.b", "a.bb", "axb"]),
    (r"x\Q(*)\E", ["x(*)", "x("]),
    (r"\x{e9}t\x{e9}", ["été", "ete"]),
    (r"(?<word>\w+)-x", ["ab-x", "-x"]),
    (r"(?i)hello", ["HeLLo", "hell"]),
    (r".*\bfoo\b.*", ["a foo b", "afoob", "éfooé"]),
    (r"\D\W\S", ["a!b", "1!b"]),
    (r"[a-c]*\z", ["abc", "abd"]),
    (r"abc(?i)def", ["abcDEF", "ABCdef"]),
    (r"a(?i)b|c", ["aB", "C", "Ab"]),
    (r"(x(?i)y|z)w", ["xYw", "Zw", "ZW"]),
    (r"(?s).+", ["a\nb"]),
    (r".+", ["a\nb"]),
]


@pytest.mark.parametrize("pattern,items", RE2_CASES)
def test_regex_matches_re2_through_onnxruntime(pattern, items):
    from onnx import TensorProto

    x = S(*items)
    (expected,) = ort_run("RegexFullMatch", [x], [TensorProto.BOOL], pattern=pattern)
    got = k("RegexFullMatch")(x, pattern=pattern)
    assert got.dtype == np.bool_ and got.tolist() == expected.tolist()


def test_regex_shapes_and_errors():
    out = k("RegexFullMatch")(S("a", "b", "ab", "", shape=(2, 2)), pattern="a|b")
    assert out.shape == (2, 2) and out.tolist() == [[True, True], [False, False]]
    assert k("RegexFullMatch")(S(), pattern="a").shape == (0,)
    with pytest.raises(InvalidArgument, match="invalid pattern"):
        k("RegexFullMatch")(S("a"), pattern="(")
    with pytest.raises(OnyxNotImplemented, match="Unicode"):
        k("RegexFullMatch")(S("a"), pattern=r"\pL")


# ---------------------------------------------------------------- TfIdfVectorizer


def tfidf_attrs(**kw):
    base = dict(
        mode="TF",
        min_gram_length=1,
        max_gram_length=2,
        max_skip_count=0,
        ngram_counts=[0, 4],
        ngram_indexes=[0, 1, 2, 3, 4, 5, 6],
        pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7],
    )
    base.update(kw)
    return base


@pytest.mark.parametrize(
    "attrs",
    [
        tfidf_attrs(),
        tfidf_attrs(max_skip_count=3),
        tfidf_attrs(mode="IDF", weights=[0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], max_skip_count=2),
        tfidf_attrs(
            mode="TFIDF", weights=[0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], min_gram_length=2, max_skip_count=1
        ),
        tfidf_attrs(ngram_indexes=[6, 0, 5, 1, 4, 2, 3], min_gram_length=1, max_gram_length=1),
        dict(
            mode="TFIDF",
            min_gram_length=1,
            max_gram_length=3,
            max_skip_count=2,
            ngram_counts=[0, 2, 6],
            ngram_indexes=[0, 1, 2, 3, 4],
            pool_int64s=[5, 6, 5, 6, 6, 7, 5, 6, 7],
            weights=[1.0, 2.0, 3.0, 4.0, 5.0],
        ),
    ],
)
@pytest.mark.parametrize("shape", [(12,), (3, 8)])
def test_tfidf_matches_onnxruntime(attrs, shape):
    from onnx import TensorProto

    rng = np.random.default_rng(sum(shape))
    for dt in (np.int32, np.int64):
        x = rng.integers(2, 9, size=shape).astype(dt)
        (expected,) = ort_run("TfIdfVectorizer", [x], [TensorProto.FLOAT], opset=9, **attrs)
        got = k("TfIdfVectorizer", 9)(x, **attrs)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_tfidf_strings_matches_onnxruntime():
    from onnx import TensorProto

    attrs = dict(
        mode="TF",
        min_gram_length=1,
        max_gram_length=2,
        max_skip_count=1,
        ngram_counts=[0, 3],
        ngram_indexes=[0, 1, 2, 3, 4],
        pool_strings=["a", "b", "é", "a", "b", "b", "é"],
    )
    x = S("a", "b", "c", "é", "a", "b", "b", "é", shape=(2, 4))
    (expected,) = ort_run("TfIdfVectorizer", [x], [TensorProto.FLOAT], opset=9, **attrs)
    np.testing.assert_allclose(k("TfIdfVectorizer", 9)(x, **attrs), expected)


def test_tfidf_large_vocabulary_falls_back():
    pool = list(range(100000, 100000 + 2000)) + [100000, 100001, 100001, 100002]
    attrs = dict(
        mode="TF",
        min_gram_length=2,
        max_gram_length=6,
        max_skip_count=0,
        ngram_counts=[0, 2000],
        ngram_indexes=list(range(2002)),
        pool_int64s=pool,
    )
    x = np.array([100000, 100001, 100002, 100001, 100002], dtype=np.int64)
    out = k("TfIdfVectorizer", 9)(x, **attrs)
    assert out.shape == (2002,) and out[2000] == 1 and out[2001] == 2 and out.sum() == 3


def test_tfidf_errors():
    with pytest.raises(InvalidArgument, match="exactly one"):
        k("TfIdfVectorizer", 9)(np.zeros(3, np.int64), **tfidf_attrs(pool_strings=["a"]))
    with pytest.raises(InvalidArgument, match="does not match"):
        k("TfIdfVectorizer", 9)(S("a"), **tfidf_attrs())
    with pytest.raises(InvalidArgument, match="1-D or 2-D"):
        k("TfIdfVectorizer", 9)(np.zeros((1, 1, 1), np.int64), **tfidf_attrs())
    with pytest.raises(InvalidArgument, match="ngram_indexes"):
        k("TfIdfVectorizer", 9)(np.zeros(3, np.int64), **tfidf_attrs(ngram_indexes=[0, 1]))
