"""Feeds converted as onnxruntime's Python binding converts them (onyx.runtime.feeds), against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onyx
from onyx.runtime import feeds
from tests.runtime._util import assert_same, make_model, onyx_session, ort_session, tensor


def _identity(elem, shape=None):
    return make_model(
        [helper.make_node("Identity", ["x"], ["y"])], [tensor("x", elem, shape)], [tensor("y", elem, shape)]
    )


def _both(model, x):
    got = onyx_session(model).run(None, {"x": x})[0]
    want = ort_session(model).run(None, {"x": x})[0]
    assert_same(got, want)
    assert all(type(v) is str for v in got.reshape(-1)) if got.dtype == object else True
    return got


STRING_FEEDS = [
    np.array([b"ab", b"c", b"d\x00e"]),  # 'S': a C string each, up to the first NUL
    np.array([b"a", b"", b"xyz"], dtype="S4").reshape(3, 1),
    np.array([b"ab", b"cd"]).view("V2"),  # np.void: every byte
    np.array([b"a", b"cd"], dtype="S2").view("V2"),  # ... trailing NUL kept
    np.array(["ab", "\xe9t\xe9", ""]),  # 'U'
    np.array(["ab\x00c", "x"]),  # 'U' with a NUL inside: cut there
    np.array([["x", "yy"], ["", "zzz"]]),
    np.array(["ab", 1, 2.5, None], dtype=object),  # objects: str(x)
    ["ab", "c"],  # lists of str
    np.zeros((0, 3), dtype="U1"),
]


@pytest.mark.parametrize("x", STRING_FEEDS, ids=lambda x: str(getattr(x, "dtype", "list")))
def test_string_feeds_match_onnxruntime(x):
    _both(_identity(TensorProto.STRING), x)


def test_void_and_bytes_arrays_decode_utf8():
    got = _both(_identity(TensorProto.STRING), np.array(["\xe9".encode()], dtype="S3"))
    assert got.tolist() == ["\xe9"]
    raw = np.frombuffer("h\xe9".encode() + b"\x00", dtype="V4")
    assert onyx_session(_identity(TensorProto.STRING)).run(None, {"x": raw})[0].tolist() == ["h\xe9\x00"]


def test_invalid_utf8_bytes_round_trip():
    x = np.array([b"\xff\xfe"])
    got = onyx_session(_identity(TensorProto.STRING)).run(None, {"x": x})[0]
    assert got[0].encode("utf-8", "surrogateescape") == b"\xff\xfe"


def test_string_tensor_helper():
    assert feeds.is_string_array(np.array([b"a"])) and feeds.is_string_array(np.zeros(1, "V3"))
    assert not feeds.is_string_array(np.zeros(1, np.float32))
    same = np.array(["a"], dtype=object)
    assert feeds.string_tensor(same) is same  # already str: no copy
    with pytest.raises(TypeError):
        feeds.string_tensor(np.zeros(2))


@pytest.mark.parametrize(
    "elem,x",
    [
        (TensorProto.FLOAT, [1, 2]),  # lists take the declared type
        (TensorProto.FLOAT, [1.5, 2.5]),
        (TensorProto.INT64, [1, 2]),
        (TensorProto.INT32, [1, 2]),
        (TensorProto.BOOL, [True, False]),
        (TensorProto.INT64, np.array([1, 2], dtype=np.int_)),  # C long: int64 here
        (TensorProto.INT64, np.array([1, 2], dtype=np.longlong)),
        (TensorProto.INT32, np.array([1, 2], dtype=np.intc)),
        (TensorProto.FLOAT, np.arange(6, dtype=np.float32)[::2]),  # not contiguous
    ],
)
def test_numeric_feeds_match_onnxruntime(elem, x):
    model = _identity(elem, [None])
    assert_same(onyx_session(model).run(None, {"x": x})[0], ort_session(model).run(None, {"x": x})[0])


@pytest.mark.parametrize(
    "elem,x",
    [
        (TensorProto.FLOAT, np.array([1.5])),  # float64 for float: refused by both
        (TensorProto.INT64, np.array([1], np.int32)),
        (TensorProto.STRING, np.array([1.0])),
        (TensorProto.FLOAT, np.array(["1.0"])),
    ],
)
def test_wrong_element_types_are_refused_like_onnxruntime(elem, x):
    model = _identity(elem, [None])
    with pytest.raises(Exception):  # noqa: B017 - onnxruntime's own exception type
        ort_session(model).run(None, {"x": x})
    with pytest.raises(onyx.InvalidArgument, match="'x'"):
        onyx_session(model).run(None, {"x": x})


def _dict_vectorizer(key_type, **vocab):
    map_in = helper.make_value_info(
        "x", helper.make_map_type_proto(key_type, helper.make_tensor_type_proto(TensorProto.FLOAT, []))
    )
    return make_model(
        [helper.make_node("DictVectorizer", ["x"], ["y"], domain="ai.onnx.ml", **vocab)],
        [map_in],
        [tensor("y", TensorProto.FLOAT, None)],
        extra_opsets={"ai.onnx.ml": 1},
    )


@pytest.mark.parametrize(
    "feed", [{"a": 1.0, "c": 3}, {"b": np.float64(2.5)}, {"a": np.int64(3), "b": True}, {"c": np.float32(1)}]
)
def test_string_key_maps_match_onnxruntime(feed):
    model = _dict_vectorizer(TensorProto.STRING, string_vocabulary=["a", "b", "c"])
    assert_same(onyx_session(model).run(None, {"x": feed})[0], ort_session(model).run(None, {"x": feed})[0])


@pytest.mark.parametrize("feed", [{1: 1.0, 3: 2.0}, {np.int64(1): 1.0, np.int32(3): 2}])
def test_int_key_maps_match_onnxruntime(feed):
    model = _dict_vectorizer(TensorProto.INT64, int64_vocabulary=[1, 2, 3])
    assert_same(onyx_session(model).run(None, {"x": feed})[0], ort_session(model).run(None, {"x": feed})[0])


def test_bad_map_feeds_are_refused():
    model = _dict_vectorizer(TensorProto.STRING, string_vocabulary=["a", "b"])
    s = onyx_session(model)
    for bad in ({"a": "x"}, {1: 1.0}, [1.0], np.zeros(2, np.float32)):
        with pytest.raises(onyx.InvalidArgument, match="'x'"):
            s.run(None, {"x": bad})


def test_list_of_dicts_for_a_sequence_of_maps():
    # onnxruntime cannot build a graph that takes seq(map) (no kernel accepts one); onyx converts the feed
    map_type = helper.make_map_type_proto(
        TensorProto.STRING, helper.make_tensor_type_proto(TensorProto.FLOAT, [])
    )
    seq_type = helper.make_sequence_type_proto(map_type)
    model = make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [helper.make_value_info("x", seq_type)],
        [helper.make_value_info("y", seq_type)],
    )
    got = onyx_session(model).run(None, {"x": [{"a": 1, "b": 2.5}, {"c": np.float64(3)}]})[0]
    assert got == [{"a": 1.0, "b": 2.5}, {"c": 3.0}]
    assert all(type(v) is np.float32 for d in got for v in d.values())
    with pytest.raises(onyx.InvalidArgument, match="'x'"):
        onyx_session(model).run(None, {"x": [{1: 1.0}]})
