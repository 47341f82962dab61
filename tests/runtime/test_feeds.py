"""What run() accepts as feeds: numpy arrays, lists, scalars, torch tensors, numpy string arrays."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onyx
from tests.runtime._util import assert_same, make_model, onyx_session, ort_session, tensor


def _identity(elem, shape):
    return make_model(
        [helper.make_node("Identity", ["x"], ["y"])], [tensor("x", elem, shape)], [tensor("y", elem, shape)]
    )


def test_numpy_arrays_of_every_common_type():
    for elem, dtype in (
        (TensorProto.FLOAT, np.float32),
        (TensorProto.DOUBLE, np.float64),
        (TensorProto.FLOAT16, np.float16),
        (TensorProto.INT64, np.int64),
        (TensorProto.INT32, np.int32),
        (TensorProto.INT8, np.int8),
        (TensorProto.UINT8, np.uint8),
        (TensorProto.BOOL, np.bool_),
    ):
        model = _identity(elem, [2, None])
        x = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
        got = onyx_session(model).run(None, {"x": x})[0]
        want = ort_session(model).run(None, {"x": x})[0]
        assert_same(got, want)


def test_python_lists_and_nested_lists():
    model = make_model(
        [helper.make_node("Add", ["x", "y"], ["z"])],
        [tensor("x", TensorProto.FLOAT, [None, 3]), tensor("y", TensorProto.FLOAT, [3])],
        [tensor("z", TensorProto.FLOAT, [None, 3])],
    )
    feeds = {"x": [[1, 2, 3], [4, 5, 6]], "y": [0.5, 0.25, 0.125]}
    assert_same(onyx_session(model).run(None, feeds)[0], ort_session(model).run(None, feeds)[0])
    model = _identity(TensorProto.INT64, [None])
    assert_same(onyx_session(model).run(None, {"x": [1, 2, 3]})[0], np.array([1, 2, 3], np.int64))
    model = _identity(TensorProto.BOOL, [None])
    assert_same(onyx_session(model).run(None, {"x": [True, False]})[0], np.array([True, False]))


def test_scalars():
    model = _identity(TensorProto.FLOAT, [])
    for value in (1.5, np.float32(1.5), np.array(1.5, np.float32)):
        out = onyx_session(model).run(None, {"x": value})[0]
        assert_same(out, np.array(1.5, np.float32))
    model = _identity(TensorProto.INT64, [])
    assert_same(onyx_session(model).run(None, {"x": 3})[0], np.array(3, np.int64))


def test_string_inputs_from_numpy_unicode_arrays():
    model = make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [tensor("x", TensorProto.STRING, [None])],
        [tensor("y", TensorProto.STRING, [None])],
    )
    s = onyx_session(model)
    for x in (
        np.array(["a", "bc", "déjà"]),
        np.array(["a", "bc", "déjà"], dtype=object),
        ["a", "bc", "déjà"],
    ):
        got = s.run(None, {"x": x})[0]
        want = ort_session(model).run(None, {"x": x})[0]
        assert_same(got, want)
        assert got.dtype == object and all(type(v) is str for v in got)


def test_torch_tensors():
    torch = pytest.importorskip("torch")
    model = make_model(
        [helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["z"])],
        [tensor("x", TensorProto.FLOAT, [None, 4])],
        [tensor("y", TensorProto.FLOAT, [None, 4]), tensor("z", TensorProto.FLOAT, [None, 4])],
    )
    s = onyx_session(model)
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    y, z = s.run(None, {"x": t})
    np.testing.assert_array_equal(y, t.numpy())
    np.testing.assert_array_equal(z, -t.numpy())
    # non-contiguous and int64 tensors convert too
    y, _ = s.run(None, {"x": t.t().contiguous().t()})
    np.testing.assert_array_equal(y, t.numpy())
    model64 = _identity(TensorProto.INT64, [None])
    assert_same(onyx_session(model64).run(None, {"x": torch.arange(3)})[0], np.arange(3, dtype=np.int64))
    # a torch tensor of the wrong element type is refused like a numpy array would be
    with pytest.raises(onyx.InvalidArgument, match="tensor\\(double\\)"):
        s.run(None, {"x": t.double()})


def test_contiguous_float32_torch_tensor_is_not_copied():
    torch = pytest.importorskip("torch")
    from onyx.runtime.session import _convert_feed

    model = _identity(TensorProto.FLOAT, [None, 4])
    s = onyx_session(model)
    t = torch.ones(2, 4, dtype=torch.float32)
    fed = _convert_feed(s.model.graph.inputs[0], t)
    assert np.shares_memory(fed, t.numpy())


def test_feed_numpy_array_is_not_copied_and_not_modified():
    from onyx.runtime.session import _convert_feed

    model = _identity(TensorProto.FLOAT, [None, 4])
    s = onyx_session(model)
    x = np.ones((2, 4), np.float32)
    assert _convert_feed(s.model.graph.inputs[0], x) is x
    out = s.run(None, {"x": x})[0]
    out[0, 0] = 5  # outputs are writable and do not alias a read-only buffer
    assert out.flags.writeable


def test_non_contiguous_numpy_views():
    model = make_model(
        [helper.make_node("MatMul", ["a", "b"], ["c"])],
        [tensor("a", TensorProto.FLOAT, [None, None]), tensor("b", TensorProto.FLOAT, [None, None])],
        [tensor("c", TensorProto.FLOAT, None)],
    )
    rs = np.random.RandomState(0)
    a = rs.randn(6, 8).astype(np.float32)[::2, ::2]
    b = rs.randn(5, 4).astype(np.float32).T
    feeds = {"a": a, "b": b}
    assert_same(onyx_session(model).run(None, feeds)[0], ort_session(model).run(None, feeds)[0], rtol=1e-5)


def test_torch_bfloat16_tensor_feeds_a_bfloat16_input():
    torch = pytest.importorskip("torch")
    import ml_dtypes

    model = _identity(TensorProto.BFLOAT16, [None])
    t = torch.tensor([1.5, -2.0, 3.25], dtype=torch.bfloat16)
    out = onyx_session(model).run(None, {"x": t})[0]
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out.astype(np.float32), t.float().numpy())


def test_unconvertible_feeds_raise_invalid_argument_naming_the_input():
    torch = pytest.importorskip("torch")
    s = onyx_session(_identity(TensorProto.FLOAT, [None]))
    with pytest.raises(onyx.InvalidArgument, match="'x'.*requires grad"):
        s.run(None, {"x": torch.ones(2, requires_grad=True)})
    with pytest.raises(onyx.InvalidArgument, match="'x'"):
        s.run(None, {"x": [[1.0], [1.0, 2.0]]})
    with pytest.raises(onyx.InvalidArgument, match="'x'"):
        s.run(None, {"x": ["a"]})
    with pytest.raises(onyx.InvalidArgument, match="'x'.*None"):
        s.run(None, {"x": None})


def test_string_inputs_become_python_str():
    model = make_model(
        [helper.make_node("Concat", ["x", "x"], ["y"], axis=0)],
        [tensor("x", TensorProto.STRING, None)],
        [tensor("y", TensorProto.STRING, None)],
    )
    s = onyx_session(model)
    cases = [
        (np.array([b"ab", b"c"]), ["ab", "c"]),  # numpy bytes ('S'): UTF-8
        (np.array([b"ab", "c"], dtype=object), ["ab", "c"]),
        (np.array(["\xe9".encode()], dtype=object), ["\xe9"]),
        (np.array([1, "a"], dtype=object), ["1", "a"]),  # other objects: str(x), as onnxruntime
        (["a", b"b"], ["a", "b"]),
    ]
    for x, want in cases:
        got = s.run(None, {"x": x})[0]
        assert got.dtype == object and got.tolist() == want + want
        assert all(type(v) is str for v in got)
    # onnxruntime agrees where it does not read raw bytes
    x = np.array([1, "a"], dtype=object)
    assert_same(s.run(None, {"x": x})[0], ort_session(model).run(None, {"x": x})[0])
    empty = np.zeros((0, 2), dtype=object)
    assert s.run(None, {"x": empty})[0].shape == (0, 2)


def _dict_vectorizer(key_type, value_type, **vocab):
    map_in = helper.make_value_info(
        "m", helper.make_map_type_proto(key_type, helper.make_tensor_type_proto(value_type, []))
    )
    return make_model(
        [helper.make_node("DictVectorizer", ["m"], ["y"], domain="ai.onnx.ml", **vocab)],
        [map_in],
        [tensor("y", value_type, None)],
        extra_opsets={"ai.onnx.ml": 1},
    )


def test_map_feeds_follow_the_declared_types():
    model = _dict_vectorizer(TensorProto.STRING, TensorProto.FLOAT, string_vocabulary=["a", "b", "c"])
    got, want = onyx_session(model), ort_session(model)
    for feed in ({"a": 1.0, "c": 2.0}, {"a": 1, "c": 2}, {"b": np.float64(3.5)}):
        assert_same(got.run(None, {"m": feed})[0], want.run(None, {"m": feed})[0])
    assert got.run(None, {"m": {b"a": 1.0}})[0].tolist() == [[1.0, 0.0, 0.0]]
    with pytest.raises(onyx.InvalidArgument, match="'m'.*key 1"):
        got.run(None, {"m": {1: 2.0}})
    with pytest.raises(onyx.InvalidArgument, match="'m'.*dict"):
        got.run(None, {"m": [1.0]})
    model = _dict_vectorizer(TensorProto.INT64, TensorProto.FLOAT, int64_vocabulary=[3, 1])
    got, want = onyx_session(model), ort_session(model)
    for feed in ({1: 5.0, 3: 7.0}, {np.int64(3): 2.0}):
        assert_same(got.run(None, {"m": feed})[0], want.run(None, {"m": feed})[0])
    with pytest.raises(onyx.InvalidArgument, match="'m'"):
        got.run(None, {"m": {"a": 5}})
