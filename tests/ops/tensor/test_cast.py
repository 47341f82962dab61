"""Cast and CastLike beyond the node suite: type pairs, saturation, E8M0 rounding, strings, opset 1."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto
from onnx.helper import np_dtype_to_tensor_dtype
from onnx.numpy_helper import to_float8e8m0

from onyx.ops.tensor.cast import cast_array

from ._util import assert_same, check, run

NUMERIC = [
    np.float32,
    np.float64,
    np.float16,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.bool_,
]


@pytest.mark.parametrize("src,dst", list(itertools.product(NUMERIC, NUMERIC)))
def test_numeric_pairs_match_reference(src, dst):
    vals = [0, 1, 3, 7, 100, 1]
    if np.dtype(src).kind in "fi" and np.dtype(dst).kind in "fi":
        vals[1] = -2
    if np.dtype(src).kind == "f":
        vals[2] = 3.75 if np.dtype(dst).kind != "f" else 3.5
    x = np.array(vals, dtype=np.float64).astype(src).reshape(2, 3)
    check("Cast", [x], 21, to=np_dtype_to_tensor_dtype(np.dtype(dst)))


def test_float_to_int_truncates_toward_zero():
    x = np.array([2.7, -2.7, 0.5, -0.5], np.float32)
    (y,) = run("Cast", [x], 13, to=TensorProto.INT32)
    assert y.dtype == np.int32 and y.tolist() == [2, -2, 0, 0]


def test_int_narrowing_keeps_low_bits():
    (y,) = run("Cast", [np.array([200, 300, -129], np.int16)], 13, to=TensorProto.INT8)
    assert y.tolist() == [-56, 44, 127]


@pytest.mark.parametrize("name", ["FLOAT", "float", "INT64", "DOUBLE"])
def test_opset1_to_is_a_string(name):
    x = np.array([1.5, 2.0], np.float32)
    (y,) = run("Cast", [x], 1, to=name)
    assert y.dtype == {"FLOAT": np.float32, "INT64": np.int64, "DOUBLE": np.float64}[name.upper()]


F8 = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz]


@pytest.mark.parametrize("dst", F8)
@pytest.mark.parametrize("src", [np.float64, np.int64, np.int32, np.float16, ml_dtypes.bfloat16])
def test_float8_saturate_from_other_types(src, dst):
    vals = np.array([0.3, 1.0, 2.0, 1000.0, -1000.0, 65000.0, -65000.0], np.float64)
    if np.dtype(src).kind == "i":
        vals = np.round(vals)
    x = vals.astype(src)
    y = cast_array(x, np.dtype(dst), saturate=1)
    fmax = float(ml_dtypes.finfo(dst).max)
    exp = np.clip(x.astype(np.float64), -fmax, fmax).astype(dst)
    assert y.dtype == np.dtype(dst)
    np.testing.assert_array_equal(y.astype(np.float64), exp.astype(np.float64))


@pytest.mark.parametrize("dst", F8)
def test_float8_specials(dst):
    x = np.array([np.inf, -np.inf, np.nan, 1e9, -0.0], np.float32)
    sat = cast_array(x, np.dtype(dst), saturate=1).astype(np.float32)
    fmax = float(ml_dtypes.finfo(dst).max)
    assert sat[0] == fmax and sat[1] == -fmax and np.isnan(sat[2]) and sat[3] == fmax
    nosat = cast_array(x, np.dtype(dst), saturate=0).astype(np.float32)
    if np.dtype(dst) == np.dtype(ml_dtypes.float8_e5m2):
        assert nosat[0] == np.inf and nosat[1] == -np.inf and nosat[3] == np.inf
    else:
        assert np.isnan(nosat[0]) and np.isnan(nosat[1]) and np.isnan(nosat[3])
    fnuz = "fnuz" in np.dtype(dst).name
    assert np.signbit(nosat[4]) == (not fnuz)


@pytest.mark.parametrize("mode", ["up", "down", "nearest"])
def test_e8m0_round_modes_match_onnx_helper(mode):
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            np.exp2(rng.uniform(-100, 100, 200)).astype(np.float32),
            np.array([1.0, 1.5, 3.0, 0.75, 2.0**-120, 1.1, 7.9], np.float32),
        ]
    )
    (y,) = run("Cast", [x], 24, to=TensorProto.FLOAT8E8M0, saturate=1, round_mode=mode)
    exp = to_float8e8m0(x, saturate=True, round_mode=mode)
    assert y.dtype == exp.dtype
    np.testing.assert_array_equal(y.view(np.uint8), exp.view(np.uint8))


def test_e8m0_examples_and_specials():
    x = np.array([1.1, 1.5, 3.0, 0.0, np.inf, np.nan, 2.0**200], np.float64)
    up = cast_array(x, np.dtype(ml_dtypes.float8_e8m0fnu), 1, "up").astype(np.float64)
    down = cast_array(x, np.dtype(ml_dtypes.float8_e8m0fnu), 1, "down").astype(np.float64)
    near = cast_array(x, np.dtype(ml_dtypes.float8_e8m0fnu), 0, "nearest").astype(np.float64)
    assert up[:3].tolist() == [2.0, 2.0, 4.0]
    assert down[:3].tolist() == [1.0, 1.0, 2.0]
    assert near[:3].tolist() == [1.0, 2.0, 4.0]  # ties round up
    assert up[3] == 2.0**-127 and up[4] == 2.0**127 and np.isnan(up[5]) and up[6] == 2.0**127
    assert np.isnan(near[3]) and np.isnan(near[4]) and np.isnan(near[5]) and np.isnan(near[6])


def test_float_to_string_formatting():
    x = np.array([0.1, 1e-7, 3.14159265, 1e20, -0.0, np.nan, np.inf, -np.inf, 100.0, 123456789.0], np.float32)
    (y,) = run("Cast", [x], 21, to=TensorProto.STRING)
    assert y.dtype == object
    assert y.tolist() == [
        "0.1",
        "1e-07",
        "3.1415927",
        "1e+20",
        "-0",
        "NaN",
        "INF",
        "-INF",
        "100",
        "1.2345679e+08",
    ]
    (y,) = run("Cast", [np.array([0.1, 1 / 3], np.float64)], 21, to=TensorProto.STRING)
    assert y.tolist() == ["0.1", "0.33333333"]


def test_ints_and_bools_to_string():
    (y,) = run("Cast", [np.array([[1, -5]], np.int64)], 21, to=TensorProto.STRING)
    assert y.tolist() == [["1", "-5"]]
    (y,) = run("Cast", [np.array([True, False])], 21, to=TensorProto.STRING)
    assert y.tolist() == ["1", "0"]


def test_string_to_float():
    s = np.array(["3.14", "1e-5", "1E8", "INF", "+INF", "-Inf", "nan", "NaN", " 2 ", "-0"], dtype=object)
    (y,) = run("Cast", [s], 21, to=TensorProto.FLOAT)
    assert y.dtype == np.float32
    exp = np.array([3.14, 1e-5, 1e8, np.inf, np.inf, -np.inf, np.nan, np.nan, 2, -0.0], np.float32)
    np.testing.assert_array_equal(y, exp)


def test_string_to_int_and_bool_and_float8():
    s = np.array(["100", "100.5", "-3", "+7"], dtype=object)
    (y,) = run("Cast", [s], 21, to=TensorProto.INT64)
    assert y.tolist() == [100, 100, -3, 7]
    (y,) = run("Cast", [np.array(["1", "0", "0.0", "2"], dtype=object)], 21, to=TensorProto.BOOL)
    assert y.tolist() == [True, False, False, True]
    (y,) = run("Cast", [np.array(["1000", "0.5"], dtype=object)], 21, to=TensorProto.FLOAT8E4M3FN)
    assert y.astype(np.float32).tolist() == [448.0, 0.5]


def test_string_to_string_and_garbage():
    s = np.array(["a", "b"], dtype=object)
    (y,) = run("Cast", [s], 21, to=TensorProto.STRING)
    assert y.tolist() == ["a", "b"]
    from onyx.errors import InvalidArgument

    with pytest.raises(InvalidArgument):
        run("Cast", [s], 21, to=TensorProto.FLOAT)


def test_subbyte_types():
    x = np.array([300, -7, 5], np.int32)
    y = cast_array(x, np.dtype(ml_dtypes.int4))
    assert y.dtype == np.dtype(ml_dtypes.int4) and y.astype(np.int8).tolist() == [-4, -7, 5]
    y = cast_array(np.array([1, 2, 3], np.dtype(ml_dtypes.uint4)), np.dtype(ml_dtypes.float8_e4m3fn))
    assert y.astype(np.float32).tolist() == [1.0, 2.0, 3.0]
    y = cast_array(np.array([-1, 1], np.dtype(ml_dtypes.int2)), np.dtype(ml_dtypes.bfloat16))
    assert y.astype(np.float32).tolist() == [-1.0, 1.0]
    y = cast_array(np.array([True, False]), np.dtype(ml_dtypes.float4_e2m1fn))
    assert y.astype(np.float32).tolist() == [1.0, 0.0]
    y = cast_array(np.array([0.5, 0.0], np.dtype(ml_dtypes.bfloat16)), np.dtype(np.bool_))
    assert y.tolist() == [True, False]
    y = cast_array(np.array([1.5, 2.0], np.dtype(ml_dtypes.bfloat16)), np.dtype(ml_dtypes.float8_e5m2))
    assert y.astype(np.float32).tolist() == [1.5, 2.0]


def test_same_type_is_free_and_castlike_versions():
    x = np.arange(4, dtype=np.float32)
    (y,) = run("Cast", [x], 13, to=TensorProto.FLOAT)
    assert y is x or np.shares_memory(x, y)
    t = np.zeros(1, ml_dtypes.float8_e4m3fn)
    (y,) = run("CastLike", [np.array([1e6], np.float32), t], 15)
    assert y.astype(np.float32)[0] == 448.0
    (y,) = run("CastLike", [np.array([1e6], np.float32), t], 19, saturate=0)
    assert np.isnan(y.astype(np.float32)[0])
    (y,) = run(
        "CastLike",
        [np.array([1.1], np.float32), np.zeros(1, ml_dtypes.float8_e8m0fnu)],
        24,
        round_mode="down",
    )
    assert y.astype(np.float32)[0] == 1.0
    got = run("CastLike", [np.array([1.7, -2.2], np.float64), np.zeros(1, np.int32)], 21)
    assert_same(got[0], np.array([1, -2], np.int32))
