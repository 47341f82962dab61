"""com.microsoft Tokenizer against onnxruntime: token expressions, separators, characters, marks, padding."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onyx
from onyx.errors import OnyxError
from tests.ops.contrib._single import MS, assert_equal_outputs, both, run_onyx

S = TensorProto.STRING
TEXT = np.array(["Hello world, this is  a test.", "ab", "", "\xe9l\xe9phant \xe9t\xe9-x"], dtype=object)

MODES = [
    dict(tokenexp="[a-zA-Z0-9_]+"),  # skl2onnx's default
    dict(tokenexp=r"\b\w\w+\b"),  # scikit-learn's default token_pattern
    dict(tokenexp=r"\S+"),
    dict(tokenexp="."),  # characters
    dict(separators=[""]),  # characters
    dict(separators=[" ", ","]),
    dict(separators=[" ", "s"]),  # applied one after the other
    dict(separators=["[ ,.]+"]),
    dict(separators=["a*"]),  # empty matches
    dict(tokenexp="a|ab"),  # leftmost-longest, as RE2 is asked for
    dict(separators=["b|b c"]),
]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: repr(m))
@pytest.mark.parametrize("mark", [0, 1])
@pytest.mark.parametrize("mincharnum", [1, 2, 3])
@pytest.mark.parametrize("shape", [(4,), (2, 2)])
def test_against_onnxruntime(mode, mark, mincharnum, shape):
    chars = mode.get("tokenexp") == "." or mode.get("separators") == [""]
    attrs = dict(mark=mark, pad_value="#", mincharnum=mincharnum, **mode)
    if chars and mincharnum > 1:
        with pytest.raises(OnyxError, match="mincharnum is too big"):
            run_onyx("Tokenizer", [TEXT.reshape(shape)], [S], **attrs)
        return
    assert_equal_outputs(*both("Tokenizer", [TEXT.reshape(shape)], [S], **attrs))


@pytest.mark.parametrize(
    "x",
    [
        np.array(["", ""], dtype=object),  # no token anywhere: a token axis of 0
        np.array([], dtype=object),
        np.zeros((3, 0), dtype=object),
        np.array([["one two three"], ["four"]], dtype=object),
    ],
    ids=["empty-strings", "empty", "n-by-0", "column"],
)
@pytest.mark.parametrize("mark", [0, 1])
def test_edge_shapes(x, mark):
    assert_equal_outputs(
        *both("Tokenizer", [x], [S], mark=mark, pad_value="PAD", mincharnum=1, tokenexp="[a-z]+")
    )


def test_padding_and_marks_layout():
    got = run_onyx(
        "Tokenizer",
        [np.array(["a bb", "c"], dtype=object)],
        [S],
        mark=1,
        pad_value="_",
        mincharnum=1,
        tokenexp="\\w+",
    )[0]
    assert got.tolist() == [["\x02", "a", "bb", "\x03"], ["\x02", "c", "\x03", "_"]]


@pytest.mark.parametrize(
    "attrs,match",
    [
        (dict(mincharnum=0, tokenexp="a"), "mincharnum must be positive"),
        (dict(mincharnum=1), "either one of the separators or tokenexp"),
        (dict(mincharnum=1, tokenexp=""), "non-empty tokenexp"),
        (dict(mincharnum=1, tokenexp="("), "can not digest tokenexp"),
        (dict(mincharnum=1, separators=["[", "a"]), "can not digest separator"),
    ],
)
def test_bad_attributes(attrs, match):
    with pytest.raises(OnyxError, match=match):
        run_onyx("Tokenizer", [np.array(["abc"], dtype=object)], [S], mark=0, pad_value="#", **attrs)


def test_bad_inputs():
    with pytest.raises(OnyxError, match=r"\[C\] or \[N\]\[C\]"):
        run_onyx(
            "Tokenizer",
            [np.array([[["a"]]], dtype=object)],
            [S],
            mark=0,
            pad_value="#",
            mincharnum=1,
            tokenexp="a",
        )
    with pytest.raises(OnyxError):
        run_onyx(
            "Tokenizer", [np.array([1.0], np.float32)], [S], mark=0, pad_value="#", mincharnum=1, tokenexp="a"
        )


def test_shape_inference_adds_the_token_axis():
    node = helper.make_node(
        "Tokenizer", ["x"], ["y"], domain=MS, mark=0, pad_value="#", mincharnum=1, tokenexp="a"
    )
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", S, ["N", 1])],
        [helper.make_tensor_value_info("y", S, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    m = onyx.infer_shapes(onyx.load(model.SerializeToString()))
    dims = m.graph.outputs[0].type.shape.dims
    assert len(dims) == 3 and dims[1] == 1
