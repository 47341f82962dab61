"""Pooling kernels against onnxruntime, plus old versions, dtypes and errors."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.errors import InvalidArgument
from tests.ops.nn._util import check_vs_ort, run_onyx

rng = np.random.default_rng(1)


def _r(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


POOL_CASES = [
    ((1, 2, 9), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
    ((2, 3, 7, 8), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ((1, 2, 7, 8), dict(kernel_shape=[3, 2], strides=[2, 3], ceil_mode=1)),
    ((1, 2, 8, 8), dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_UPPER")),
    ((1, 2, 9, 9), dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_LOWER")),
    ((1, 2, 9, 9), dict(kernel_shape=[4, 4], auto_pad="VALID", strides=[3, 3])),
    ((1, 1, 5, 6, 7), dict(kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[0, 1, 1, 1, 1, 0])),
]


@pytest.mark.parametrize("xs,attrs", POOL_CASES)
def test_maxpool_vs_ort(xs, attrs):
    check_vs_ort("MaxPool", {"x": _r(*xs)}, attrs, opset=12)


@pytest.mark.parametrize("xs,attrs", POOL_CASES)
@pytest.mark.parametrize("include", [0, 1])
def test_averagepool_vs_ort(xs, attrs, include):
    check_vs_ort("AveragePool", {"x": _r(*xs)}, dict(attrs, count_include_pad=include), opset=11)


def test_maxpool_dilations_and_indices_vs_ort():
    x = _r(2, 3, 9, 10)
    attrs = dict(kernel_shape=[3, 3], strides=[2, 1], pads=[1, 2, 1, 0], dilations=[2, 2])
    check_vs_ort("MaxPool", {"x": x}, attrs, opset=12, n_outputs=2)


@pytest.mark.parametrize("order", [0, 1])
def test_maxpool_indices_storage_order_vs_ort(order):
    x = _r(2, 2, 5, 6)
    attrs = dict(kernel_shape=[2, 3], strides=[2, 2], pads=[0, 1, 1, 1], storage_order=order)
    check_vs_ort("MaxPool", {"x": x}, attrs, opset=12, n_outputs=2)


def test_maxpool_int8_padding_never_wins():
    x = np.full((1, 1, 3, 3), -128, np.int8)
    y, i = run_onyx("MaxPool", {"x": x}, dict(kernel_shape=[2, 2], pads=[1, 1, 0, 0]), opset=12, n_outputs=2)
    assert y.dtype == np.int8 and (y == -128).all()
    assert i.dtype == np.int64 and (i >= 0).all()
    check_vs_ort(
        "MaxPool",
        {"x": rng.integers(-128, 127, (1, 2, 5, 5)).astype(np.int8)},
        dict(kernel_shape=[3, 3]),
        opset=12,
    )


def test_old_versions():
    x = _r(1, 2, 6, 6)
    y1 = run_onyx("MaxPool", {"x": x}, dict(kernel_shape=[2, 2], strides=[2, 2]), opset=1)
    np.testing.assert_allclose(y1, x.reshape(1, 2, 3, 2, 3, 2).max(axis=(3, 5)))
    a1 = run_onyx("AveragePool", {"x": x}, dict(kernel_shape=[2, 2], strides=[2, 2]), opset=1)
    np.testing.assert_allclose(a1, x.reshape(1, 2, 3, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-6)
    check_vs_ort(
        "AveragePool", {"x": x}, dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1), opset=7
    )


def test_averagepool_dilations_v19_vs_ort():
    x = _r(1, 2, 9, 9)
    attrs = dict(kernel_shape=[2, 2], dilations=[2, 3], pads=[1, 1, 1, 1], ceil_mode=1, strides=[2, 2])
    check_vs_ort("AveragePool", {"x": x}, attrs, opset=19)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lppool_vs_ort(p):
    check_vs_ort("LpPool", {"x": _r(1, 2, 6, 7)}, dict(kernel_shape=[3, 2], strides=[2, 2], p=p), opset=11)


def test_global_pools_vs_ort():
    x = _r(2, 3, 4, 5)
    check_vs_ort("GlobalAveragePool", {"x": x}, opset=1)
    check_vs_ort("GlobalMaxPool", {"x": x}, opset=1)
    check_vs_ort("GlobalLpPool", {"x": x}, dict(p=3), opset=2)


def test_pool_float16():
    x = _r(1, 2, 6, 6)
    y = run_onyx("AveragePool", {"x": x.astype(np.float16)}, dict(kernel_shape=[2, 2]), opset=11)
    assert y.dtype == np.float16
    ref = run_onyx("AveragePool", {"x": x}, dict(kernel_shape=[2, 2]), opset=11)
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=1e-2, atol=1e-2)


def test_pool_errors():
    with pytest.raises(InvalidArgument):
        run_onyx("MaxPool", {"x": _r(1, 2, 5, 5)}, dict(kernel_shape=[2]), opset=12)
    with pytest.raises(InvalidArgument):
        run_onyx("AveragePool", {"x": _r(1, 2, 5, 5)}, dict(kernel_shape=[2, 2], strides=[0, 1]), opset=11)


def test_max_unpool_roundtrip():
    x = np.abs(_r(1, 2, 4, 4)) + 0.1
    y, idx = run_onyx("MaxPool", {"x": x}, dict(kernel_shape=[2, 2], strides=[2, 2]), opset=12, n_outputs=2)
    u = run_onyx("MaxUnpool", {"y": y, "i": idx}, dict(kernel_shape=[2, 2], strides=[2, 2]), opset=11)
    assert u.shape == x.shape
    again = run_onyx("MaxPool", {"x": u}, dict(kernel_shape=[2, 2], strides=[2, 2]), opset=12)
    np.testing.assert_array_equal(again, y)


def test_roi_align_vs_ort():
    x = _r(2, 3, 10, 12)
    rois = np.array([[0.5, 1.0, 7.0, 8.5], [2.0, 2.0, 11.0, 9.0], [0, 0, 3, 3]], np.float32)
    bi = np.array([0, 1, 1], np.int64)
    for mode in ("avg", "max"):
        attrs = dict(output_height=3, output_width=4, sampling_ratio=2, spatial_scale=1.0, mode=mode)
        check_vs_ort("RoiAlign", {"x": x, "rois": rois, "bi": bi}, attrs, opset=16, rtol=1e-4, atol=1e-4)
    attrs = dict(output_height=2, output_width=2, sampling_ratio=0, spatial_scale=0.5)
    check_vs_ort("RoiAlign", {"x": x, "rois": rois, "bi": bi}, attrs, opset=10, rtol=1e-4, atol=1e-4)


def test_max_roi_pool_vs_ort():
    x = _r(1, 2, 8, 8)
    rois = np.array([[0, 1, 1, 6, 5], [0, 0, 0, 7, 7]], np.float32)
    check_vs_ort("MaxRoiPool", {"x": x, "rois": rois}, dict(pooled_shape=[2, 3], spatial_scale=1.0), opset=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8])
def test_maxpool_in_channel_blocks_matches_one_pass(dtype, monkeypatch):
    """The numpy path reduces blocks of channels (onyx.kernels.pool._BLOCK_BYTES, a block smaller than
    a channel here): the same values as one pass over all channels, NaNs and padding included, and as
    onnxruntime."""
    from onyx.kernels import pool

    monkeypatch.setattr(pool, "compiled", lambda name: None)  # the numpy path
    x = (rng.standard_normal((2, 5, 11, 12)) * 50).astype(dtype)
    if dtype != np.int8:
        x[1, 3, 4, 5] = np.nan
    geo = dict(kernel=(3, 3), strides=(2, 2), dilations=(1, 1), pads_begin=(1, 1), out_shape=(6, 6))
    whole = pool.separable_reduce(x, (3, 3), (2, 2), (1, 1), (1, 1), (6, 6), np.maximum, pool.lowest(x.dtype))
    monkeypatch.setattr(pool, "_BLOCK_BYTES", 2 * x[0, 0].nbytes)
    np.testing.assert_array_equal(pool.max_pool2d(x, **geo), whole)
    monkeypatch.setattr(pool, "_BLOCK_BYTES", 1)
    np.testing.assert_array_equal(pool.max_pool2d(x, **geo), whole)
    if dtype == np.float32:  # (onnxruntime's max skips NaNs: compared without one)
        attrs = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
        check_vs_ort("MaxPool", {"x": np.nan_to_num(x)}, attrs, opset=12)
