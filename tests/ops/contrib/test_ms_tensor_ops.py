"""com.microsoft versions of tensor ops that predate their ONNX counterparts (Trilu, Unique, Range,
ExpandDims, Pad, GatherND, GridSample, TransposeMatMul, Inverse, SampleOp), against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import OnyxError
from tests.ops.contrib._single import assert_equal_outputs, both, run_onyx

R = np.random.default_rng(0)


def close(got, want, rtol=1e-5, atol=1e-6):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("k", [None, 0, 1, -2, 7])
@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 3), (1, 6, 2)])
def test_trilu(k, upper, shape):
    x = R.standard_normal(shape).astype(np.float32)
    kk = None if k is None else np.array(k, np.int64)
    assert_equal_outputs(*both("Trilu", [x, kk], [T.FLOAT], upper=upper))


@pytest.mark.parametrize(
    "x",
    [
        np.array([2, 1, 1, 3, 4, 3], np.float32),
        np.array([2.5, -1.0, 2.5, 0.0, -0.0], np.float32),
        np.array([], np.float32),
        R.integers(0, 5, 50).astype(np.float32),
    ],
    ids=["doc", "signed-zero", "empty", "many"],
)
def test_unique(x):
    assert_equal_outputs(*both("Unique", [x], [T.FLOAT, T.INT64, T.INT64]))


def test_unique_other_types():
    # onnxruntime registers float only; onyx runs any type the same way
    y, idx, counts = run_onyx("Unique", [np.array([2, 1, 1, 3, 4, 3], np.int64)], [T.INT64, T.INT64, T.INT64])
    assert (y.tolist(), idx.tolist(), counts.tolist()) == ([2, 1, 3, 4], [0, 1, 1, 2, 3, 2], [1, 2, 2, 1])
    y, idx, counts = run_onyx(
        "Unique", [np.array(["b", "a", "b"], dtype=object)], [T.STRING, T.INT64, T.INT64]
    )
    assert (y.tolist(), idx.tolist(), counts.tolist()) == (["b", "a"], [0, 1, 0], [2, 1])


def test_unique_refuses_2d():
    with pytest.raises(OnyxError, match="1-D"):
        run_onyx("Unique", [np.zeros((2, 2), np.int64)], [T.INT64, T.INT64, T.INT64])


@pytest.mark.parametrize(
    "start,limit,delta",
    [(0, 10, None), (10, 0, -3), (1.5, 4.0, 0.5), (0, 5, 2), (5, 5, None), (-3.0, 3.0, None)],
)
@pytest.mark.parametrize(
    "dtype,elem",
    [
        (np.int32, T.INT32),
        (np.int64, T.INT64),
        (np.float32, T.FLOAT),
        (np.float64, T.DOUBLE),
        (np.int16, T.INT16),
    ],
)
def test_range(start, limit, delta, dtype, elem):
    if np.dtype(dtype).kind == "i" and any(isinstance(v, float) for v in (start, limit, delta)):
        return
    ins = [
        np.array(start, dtype),
        np.array([limit], dtype),
        None if delta is None else np.array(delta, dtype),
    ]
    close(*both("Range", ins, [elem]))


def test_range_zero_delta():
    with pytest.raises(OnyxError, match="delta"):
        run_onyx("Range", [np.array(0, np.int64), np.array(3, np.int64), np.array(0, np.int64)], [T.INT64])


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_expand_dims(axis):
    x = R.standard_normal((2, 3)).astype(np.float32)
    assert_equal_outputs(*both("ExpandDims", [x, np.array(axis, np.int32)], [T.FLOAT]))


def test_expand_dims_strings_and_bad_axis():
    x = np.array(["a", "b"], dtype=object)
    assert_equal_outputs(*both("ExpandDims", [x, np.array(-1, np.int32)], [T.STRING]))
    with pytest.raises(OnyxError, match="out of range"):
        run_onyx("ExpandDims", [x, np.array(3, np.int32)], [T.STRING])


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize(
    "pads",
    [np.array([0, 2, 0, 0], np.int64), np.array([[1, 1, 2, 0]], np.int64), np.array([1, -1, 0, 1], np.int64)],
)
@pytest.mark.parametrize("value", [None, np.array(2.5, np.float32), np.array([-1.0], np.float32)])
def test_pad(mode, pads, value):
    x = R.standard_normal((3, 4)).astype(np.float32)
    close(*both("Pad", [x, pads, value], [T.FLOAT], mode=mode))


def test_pad_bad_inputs():
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(OnyxError, match="pads must be"):
        run_onyx("Pad", [x, np.array([1, 2], np.int64)], [T.FLOAT])
    with pytest.raises(OnyxError, match="mode"):
        run_onyx("Pad", [x, np.zeros(4, np.int64)], [T.FLOAT], mode="wrap")


@pytest.mark.parametrize(
    "data,indices",
    [
        (np.array([[0, 1], [2, 3]], np.float32), np.array([[0, 0], [1, 1]], np.int64)),
        (np.array([[0, 1], [2, 3]], np.float32), np.array([[1], [0]], np.int64)),
        (np.arange(8, dtype=np.float32).reshape(2, 2, 2), np.array([[[0, 1]], [[1, 0]]], np.int32)),
        (np.arange(24, dtype=np.float32).reshape(2, 3, 4), np.array([[-1, -2], [0, 2]], np.int64)),
    ],
)
def test_gather_nd(data, indices):
    assert_equal_outputs(*both("GatherND", [data, indices], [T.FLOAT]))


def test_gather_nd_out_of_range():
    with pytest.raises(OnyxError, match="out of range"):
        run_onyx("GatherND", [np.zeros((2, 2), np.float32), np.array([[2, 0]], np.int64)], [T.FLOAT])


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample(mode, padding_mode, align_corners):
    x = R.standard_normal((2, 3, 5, 6)).astype(np.float32)
    grid = (R.random((2, 4, 7, 2)) * 2.4 - 1.2).astype(np.float32)
    close(
        *both(
            "GridSample",
            [x, grid],
            [T.FLOAT],
            mode=mode,
            padding_mode=padding_mode,
            align_corners=align_corners,
        ),
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_transpose_mat_mul(trans_a, trans_b, alpha):
    a = R.standard_normal((2, 5, 4) if trans_a else (2, 4, 5)).astype(np.float32)
    b = R.standard_normal((3, 5) if trans_b else (5, 3)).astype(np.float32)
    close(*both("TransposeMatMul", [a, b], [T.FLOAT], transA=trans_a, transB=trans_b, alpha=alpha), rtol=1e-5)


@pytest.mark.parametrize(
    "dtype,elem,rtol",
    [(np.float32, T.FLOAT, 1e-4), (np.float64, T.DOUBLE, 1e-10), (np.float16, T.FLOAT16, 2e-2)],
)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1)])
def test_inverse(dtype, elem, rtol, shape):
    n = shape[-1]
    x = (R.standard_normal(shape) + 3 * np.eye(n)).astype(dtype)  # well conditioned
    close(*both("Inverse", [x], [elem]), rtol=rtol, atol=rtol)


def test_inverse_bad_inputs():
    with pytest.raises(OnyxError, match=r"\[\.\.\., M, M\]"):
        run_onyx("Inverse", [np.zeros((2, 3), np.float32)], [T.FLOAT])
    with pytest.raises(OnyxError, match="not invertible"):
        run_onyx("Inverse", [np.zeros((2, 2), np.float32)], [T.FLOAT])


def test_sample_op():
    assert_equal_outputs(*both("SampleOp", [R.standard_normal((2, 3)).astype(np.float32)], [T.FLOAT]))
