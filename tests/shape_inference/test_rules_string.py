"""Shape rules of RegexFullMatch, StringConcat, StringNormalizer, StringSplit and TfIdfVectorizer."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP

from onyx.errors import InvalidGraph
from onyx.ir.symbolic import Sym
from tests.shape_inference._mlctl_rules import (
    check_case,
    family_ops,
    infer,
    infer_all,
    model,
    same_as_onnx,
    same_as_run,
    suite_cases,
)

S = TP.STRING
N, C = Sym.named("N"), Sym.named("C")


def strs(*shape):
    return np.full(shape, "ab cd", dtype=object)


def test_regex_full_match_and_concat():
    m = model("RegexFullMatch", [("x", S, ["N", 2])], {"pattern": "a.*"})
    assert same_as_onnx(m)["y0"] == (TP.BOOL, [N, 2])
    same_as_run(m, {"x": strs(3, 2)})
    m = model("StringConcat", [("x", S, ["N", 1]), ("y", S, [4])])
    assert same_as_onnx(m)["y0"] == (S, [N, 4])
    same_as_run(m, {"x": strs(2, 1), "y": strs(4)})
    with pytest.raises(InvalidGraph):
        infer("StringConcat", [("x", S, [3]), ("y", S, [4])])


@pytest.mark.parametrize(
    "x,attrs,want",
    [
        (["C"], {"case_change_action": "UPPER"}, ["C"]),
        ([1, "C"], {"case_change_action": "LOWER"}, [1, "C"]),
        ([1, 4], {}, [1, 4]),
        ([4], {"stopwords": ["ab cd"]}, [None]),
    ],
)
def test_string_normalizer(x, attrs, want):
    m = model("StringNormalizer", [("x", S, x)], attrs, opset=10)
    elem, dims = same_as_onnx(m)["y0"]
    assert elem == S and len(dims) == len(want)
    for d, w in zip(dims, want):
        assert isinstance(d, Sym) if w is None else d == (C if w == "C" else w)
    # onnxruntime needs an installed en_US locale for StringNormalizer: run onyx's kernel
    same_as_run(m, {"x": strs(*[3 if d == "C" else d for d in x])}, oracle="onyx")


def test_string_normalizer_bad_shape():
    with pytest.raises(InvalidGraph):
        infer("StringNormalizer", [("x", S, [2, 3])], opset=10)


def test_string_split():
    m = model("StringSplit", [("x", S, ["N", 2])], {"delimiter": " "}, n_out=2)
    got = same_as_onnx(m)
    elem, dims = got["y0"]
    assert elem == S and dims[:2] == [N, 2] and isinstance(dims[2], Sym)
    assert got["y1"] == (TP.INT64, [N, 2])
    same_as_run(m, {"x": strs(3, 2)})


@pytest.mark.parametrize("x,want", [(["L"], [7]), (["B", "L"], ["B", 7])])
def test_tf_idf_vectorizer(x, want):
    attrs = dict(
        mode="TF",
        min_gram_length=1,
        max_gram_length=2,
        max_skip_count=0,
        ngram_counts=[0, 4],
        ngram_indexes=[0, 1, 2, 3, 6, 5],
        pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8],
    )
    m = model("TfIdfVectorizer", [("x", TP.INT64, x)], attrs, opset=9)
    got = same_as_onnx(m)["y0"]
    assert got == (TP.FLOAT, [Sym.named(d) if isinstance(d, str) else d for d in want])
    same_as_run(m, {"x": np.arange(2 * len(x) + 4).reshape([2] * (len(x) - 1) + [-1]) % 9})
    with pytest.raises(InvalidGraph):
        infer_all("TfIdfVectorizer", [("x", TP.INT64, [1, 2, 3])], attrs, opset=9)


CASES = suite_cases(
    ["regex_full_match", "string_concat", "string_split", "stringnormalizer", "tfidfvectorizer"],
    family_ops("string"),
)


def test_suite_has_cases():
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_suite(case):
    check_case(case)


def test_every_op_of_the_family_has_a_rule():
    from tests.shape_inference._mlctl_rules import ops_without_rules

    assert ops_without_rules("string") == []
