"""Protocol datatypes <-> numpy: raw and JSON forms, and the checks that come before any allocation."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onyx.serve import datatypes
from onyx.serve.errors import BadRequest

SAMPLES = {
    "BOOL": np.array([True, False, True]),
    "UINT8": np.array([0, 255, 7], np.uint8),
    "UINT16": np.array([0, 65535, 7], np.uint16),
    "UINT32": np.array([0, 2**32 - 1, 7], np.uint32),
    "UINT64": np.array([0, 2**64 - 1, 7], np.uint64),
    "INT8": np.array([-128, 127, 0], np.int8),
    "INT16": np.array([-(2**15), 2**15 - 1, 0], np.int16),
    "INT32": np.array([-(2**31), 2**31 - 1, 0], np.int32),
    "INT64": np.array([-(2**63), 2**63 - 1, 0], np.int64),
    "FP16": np.array([0.5, -65504, np.inf], np.float16),
    "FP32": np.array([1.5, -3.25e-8, np.nan], np.float32),
    "FP64": np.array([1e300, -0.0, 2.5]),
    "BF16": np.array([1.0, -2.5, 3e38], ml_dtypes.bfloat16),
    "BYTES": np.array([b"", b"abc", "é".encode()], dtype=object),
}


@pytest.mark.parametrize("datatype", list(SAMPLES))
def test_raw_round_trip(datatype):
    a = SAMPLES[datatype].reshape(3, 1)
    raw = datatypes.to_raw(a, datatype)
    back = datatypes.from_raw(raw, datatype, (3, 1), "x")
    assert back.shape == (3, 1) and back.dtype == datatypes.NUMPY[datatype]
    if datatype == "BYTES":
        assert back.tolist() == a.tolist()
    else:
        assert np.array_equal(back, a, equal_nan=True)
    assert datatypes.from_numpy(a.dtype) == datatype


@pytest.mark.parametrize("datatype", [d for d in SAMPLES if d not in ("BYTES", "BF16")])
def test_json_round_trip(datatype):
    a = SAMPLES[datatype]
    if datatype in ("FP16", "FP32", "FP64"):
        a = a[np.isfinite(a)]
    back = datatypes.from_json(datatypes.to_json(a, datatype), datatype, a.shape, "x")
    assert back.dtype == datatypes.NUMPY[datatype] and np.array_equal(back, a)


def test_json_nested_lists_are_row_major():
    assert datatypes.from_json([[1, 2], [3, 4]], "INT32", (2, 2), "x").tolist() == [[1, 2], [3, 4]]


@pytest.mark.parametrize(
    "data,datatype,shape,fragment",
    [
        ([1, 2, 3], "INT32", (2, 2), "3 values"),
        ([1.5, 2], "INT32", (2,), "integers"),
        ([True, 1], "BOOL", (2,), "true or false"),
        ([1, True], "FP32", (2,), "numbers"),
        ([300], "UINT8", (1,), "out of range"),
        ([1], "BYTES", (1,), "strings"),
    ],
)
def test_json_checks(data, datatype, shape, fragment):
    with pytest.raises(BadRequest, match=fragment):
        datatypes.from_json(data, datatype, shape, "x")


def test_raw_sizes_are_checked_before_allocating():
    with pytest.raises(BadRequest, match="do not hold"):
        datatypes.from_raw(b"\0" * 8, "FP32", (1 << 40,), "x")
    with pytest.raises(BadRequest, match="cannot hold"):
        datatypes.from_raw(b"\0" * 8, "BYTES", (1 << 40,), "x")
    with pytest.raises(BadRequest, match="claims"):
        datatypes.from_raw(b"\xff\xff\xff\x7f", "BYTES", (1,), "x")
    with pytest.raises(BadRequest, match="left over"):
        datatypes.from_raw(b"\0\0\0\0\0", "BYTES", (1,), "x")


def test_config_and_onnx_names():
    assert datatypes.from_config("TYPE_STRING") == "BYTES" and datatypes.to_config("BYTES") == "TYPE_STRING"
    assert datatypes.from_config("TYPE_BF16") == "BF16"
    assert datatypes.from_onnx_type("tensor(float)") == "FP32"
    assert datatypes.from_onnx_type("seq(tensor(float))") is None
    with pytest.raises(BadRequest):
        datatypes.check_shape([2, -1], "x")
