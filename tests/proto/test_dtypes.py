"""Every ONNX element type, in every storage onnx writes: raw_data (numpy_helper.from_array) and the typed
fields (helper.make_tensor(raw=False): float_data, int32_data with its packing rules for 16-bit and
smaller types, int64_data, uint64_data, double_data, string_data), decoded by onyx's Tensor.numpy() and
compared with onnx.numpy_helper.to_array; and onyx's own writer read back by onnx."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.ir.dtypes import DataType
from onyx.model_io import load_tensor_proto

ALL_TYPES = [(name, code) for name, code in TensorProto.DataType.items() if code != TensorProto.UNDEFINED]
TYPE_IDS = [name for name, _ in ALL_TYPES]


def test_every_onnx_type_is_known_to_onyx():
    for name, code in ALL_TYPES:
        assert DataType(code).name == name


def sample(code: int, shape=(3, 5), seed: int = 0) -> np.ndarray:
    """Values covering the type's range, with its special values (NaN, inf, -0, extremes) where it has them.

    The specials come first when the shape has room for them, else a random pick of everything.
    """
    rng = np.random.default_rng(seed + code)
    npdt = helper.tensor_dtype_to_np_dtype(code)
    n = int(np.prod(shape))
    m = max(n, 24)
    if code == TensorProto.STRING:
        pool = ["", "a", "héllo", "€uro", "tab\tnew\nline", "x" * 40, "日本語"]
        full = np.array([pool[i % len(pool)] for i in range(m)], dtype=object)
    elif code == TensorProto.BOOL:
        full = rng.integers(0, 2, m).astype(bool)
    elif code in (TensorProto.COMPLEX64, TensorProto.COMPLEX128):
        full = rng.standard_normal(m) + 1j * rng.standard_normal(m)
        full[:3] = [complex(np.nan, 1), complex(0, -np.inf), complex(-0.0, 0)]
        full = full.astype(npdt)
    elif npdt.kind in "iu" or (npdt.kind == "V" and "int" in npdt.name):
        info = ml_dtypes.iinfo(npdt) if npdt.kind == "V" else np.iinfo(npdt)
        lo, hi = int(info.min), int(info.max)
        big = np.uint64 if hi >= 2**63 else np.int64
        rand = [int(v) for v in rng.integers(lo, hi, m - 4, dtype=big)]
        full = np.array([lo, hi, 0, 1, *rand], dtype=object).astype(npdt)
    else:  # floating types: a few binades, plus the specials the type can hold (others saturate or NaN)
        with np.errstate(all="ignore"):
            vals = (rng.standard_normal(m) * 4).astype(np.float32)
            vals[:8] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -2.5, 1e-3]
            full = vals.astype(npdt)
    if n < 24:
        full = full[rng.permutation(m)]
    return full[:n].reshape(shape)


def assert_same(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape
    if expected.dtype == object:
        assert got.tolist() == expected.tolist()
    elif expected.dtype.kind == "c":
        np.testing.assert_array_equal(got, expected)
    elif expected.dtype.kind in "iub" or "int" in expected.dtype.name:
        assert np.array_equal(
            got.astype(np.int64) if "int" in got.dtype.name and got.dtype.kind == "V" else got,
            expected.astype(np.int64)
            if "int" in expected.dtype.name and expected.dtype.kind == "V"
            else expected,
        )
    else:
        a, b = got.astype(np.float64), expected.astype(np.float64)
        np.testing.assert_array_equal(a, b)  # NaN equals NaN here
        assert np.array_equal(np.signbit(a), np.signbit(b)), "signed zeros differ"


def onyx_decode(proto: TensorProto) -> np.ndarray:
    return load_tensor_proto(proto.SerializeToString()).numpy()


@pytest.mark.parametrize(("name", "code"), ALL_TYPES, ids=TYPE_IDS)
def test_raw_data(name, code):
    arr = sample(code)
    proto = numpy_helper.from_array(arr, "t")
    if code != TensorProto.STRING:
        assert proto.HasField("raw_data")
    assert_same(onyx_decode(proto), numpy_helper.to_array(proto))


@pytest.mark.parametrize(("name", "code"), ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("shape", [(3, 5), (0,), (), (7,)], ids=["3x5", "empty", "scalar", "odd"])
def test_typed_fields(name, code, shape):
    arr = sample(code, shape)
    values = arr.reshape(-1).tolist() if code == TensorProto.STRING else arr.reshape(-1)
    proto = helper.make_tensor("t", code, list(shape), values, raw=False)
    assert not proto.HasField("raw_data")
    assert_same(onyx_decode(proto), numpy_helper.to_array(proto))


@pytest.mark.parametrize(("name", "code"), ALL_TYPES, ids=TYPE_IDS)
def test_from_numpy_round_trips_through_onnx(name, code, tmp_path):
    arr = sample(code)
    path = tmp_path / "t.pb"
    onyx.save_tensor(onyx.Tensor.from_numpy(arr, "t"), path)
    proto = onnx.load_tensor(str(path))
    assert proto == numpy_helper.from_array(arr, "t")  # the same message onnx itself writes
    assert_same(numpy_helper.to_array(proto), numpy_helper.to_array(numpy_helper.from_array(arr, "t")))
    assert_same(onyx.load_tensor(path), numpy_helper.to_array(proto))


# ---------------------------------------------------------------------------------------------
# int32_data corner cases written by hand (other writers than onnx.helper)


def _tensor_bytes(code: int, dims: list[int], field: bytes) -> bytes:
    from onyx.proto.wire import VARINT, tag, varint

    out = b"".join(tag(1, VARINT) + varint(d) for d in dims) + tag(2, VARINT) + varint(code)
    return out + field


def test_int32_data_unpacked_and_negative():
    from onyx.proto.wire import VARINT, tag, varint

    vals = [-128, -1, 0, 127]
    field = b"".join(
        tag(5, VARINT) + varint(v) for v in vals
    )  # repeated, not packed; negatives sign-extended
    data = _tensor_bytes(TensorProto.INT8, [4], field)
    expected = numpy_helper.to_array(TensorProto.FromString(data))
    assert_same(onyx.load_tensor(data), expected)
    assert expected.tolist() == vals


def test_int32_data_mixed_packed_and_unpacked_runs():
    from onyx.proto.encode import packed_int32_field
    from onyx.proto.wire import VARINT, tag, varint

    field = packed_int32_field([1, 2]) + tag(5, VARINT) + varint(3) + packed_int32_field([-4])
    data = _tensor_bytes(TensorProto.INT16, [4], field)
    expected = numpy_helper.to_array(TensorProto.FromString(data))
    assert_same(onyx.load_tensor(data), expected)


def test_float16_bit_patterns_in_int32_data():
    bits = np.array([0x7C00, 0xFC00, 0x7E00, 0x8000, 0x3C00], dtype=np.uint16)  # inf, -inf, nan, -0, 1
    proto = helper.make_tensor("t", TensorProto.FLOAT16, [5], bits.view(np.float16), raw=False)
    got = onyx_decode(proto)
    assert_same(got, numpy_helper.to_array(proto))
    assert np.array_equal(got.view(np.uint16), bits)


@pytest.mark.parametrize(
    "code", [TensorProto.INT4, TensorProto.UINT4, TensorProto.FLOAT4E2M1, TensorProto.INT2, TensorProto.UINT2]
)
def test_sub_byte_types_pack_several_per_int32(code):
    arr = sample(code, (9,))
    proto = helper.make_tensor("t", code, [9], arr, raw=False)
    per = 2 if "4" in TensorProto.DataType.Name(code) else 4
    assert len(proto.int32_data) == -(-9 // per)
    assert_same(onyx_decode(proto), numpy_helper.to_array(proto))


@pytest.mark.parametrize(
    "code", [TensorProto.FLOAT, TensorProto.INT64, TensorProto.UINT4, TensorProto.STRING, TensorProto.FLOAT16]
)
def test_wrong_element_count_is_an_onyx_error(code):
    arr = sample(code, (4,))
    proto = helper.make_tensor("t", code, [4], arr.tolist() if code == TensorProto.STRING else arr, raw=False)
    proto.dims[:] = [5]
    with pytest.raises(onyx.InvalidGraph, match="'t'"):
        onyx_decode(proto)
    raw = numpy_helper.from_array(arr, "t")
    raw.dims[:] = [1]
    with pytest.raises(onyx.InvalidGraph, match="'t'"):
        onyx_decode(raw)
