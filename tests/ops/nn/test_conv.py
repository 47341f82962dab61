"""Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv, Col2Im beyond the node suite."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onyx.errors import InvalidArgument
from onyx.ops.nn.conv import conv
from onyx.ops.nn.conv_transpose import conv_transpose
from tests.ops.nn._util import check_vs_ort, run_onyx

rng = np.random.default_rng(0)


def _r(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


CONV_CASES = [
    # x shape, w shape, attrs
    ((2, 4, 9), (6, 4, 3), dict(pads=[1, 2], strides=[2])),
    ((1, 3, 10, 11), (5, 3, 3, 3), dict(pads=[1, 1, 1, 1])),
    ((2, 3, 10, 11), (4, 3, 3, 2), dict(strides=[2, 3], dilations=[2, 1], pads=[0, 1, 2, 0])),
    ((1, 8, 7, 7), (8, 2, 3, 3), dict(group=4, pads=[1, 1, 1, 1])),
    ((2, 6, 8, 8), (6, 1, 3, 3), dict(group=6, pads=[1, 1, 1, 1])),  # depthwise
    ((1, 4, 8, 8), (8, 1, 3, 3), dict(group=4, strides=[2, 2], pads=[1, 1, 1, 1])),  # depthwise, multiplier 2
    ((1, 6, 9, 9), (6, 1, 5, 5), dict(group=6, dilations=[2, 2], pads=[4, 3, 4, 3])),
    ((1, 6, 9, 9), (6, 1, 5, 5), dict(group=6, auto_pad="SAME_UPPER")),
    ((1, 4, 8, 8), (6, 4, 1, 1), dict(strides=[2, 2])),  # strided 1x1
    ((2, 4, 5, 5), (6, 4, 1, 1), {}),  # plain 1x1
    ((1, 3, 7, 8), (2, 3, 3, 3), dict(auto_pad="SAME_LOWER", strides=[2, 2])),
    ((1, 3, 7, 8), (2, 3, 3, 3), dict(auto_pad="VALID", strides=[2, 1])),
    ((1, 2, 5, 6, 7), (4, 2, 3, 2, 3), dict(pads=[1, 0, 1, 1, 0, 1], strides=[1, 2, 1])),
]


@pytest.mark.parametrize("xs,ws,attrs", CONV_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_vs_ort(xs, ws, attrs, bias):
    inputs = {"x": _r(*xs), "w": _r(*ws), "b": _r(ws[0]) if bias else None}
    check_vs_ort("Conv", inputs, attrs, opset=11)


def test_conv_float16_and_bfloat16():
    x, w, b = _r(1, 3, 6, 6), _r(4, 3, 3, 3), _r(4)
    ref = conv(x, w, b, pads=[1, 1, 1, 1])
    y16 = conv(x.astype(np.float16), w.astype(np.float16), b.astype(np.float16), pads=[1, 1, 1, 1])
    assert y16.dtype == np.float16
    np.testing.assert_allclose(y16.astype(np.float32), ref, rtol=2e-2, atol=2e-2)
    bf = ml_dtypes.bfloat16
    ybf = conv(x.astype(bf), w.astype(bf), b.astype(bf), pads=[1, 1, 1, 1])
    assert ybf.dtype == bf
    np.testing.assert_allclose(ybf.astype(np.float32), ref, rtol=5e-2, atol=1e-1)
    y64 = conv(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), pads=[1, 1, 1, 1])
    assert y64.dtype == np.float64


def test_conv_empty_batch():
    y = conv(np.zeros((0, 3, 5, 5), np.float32), _r(2, 3, 3, 3))
    assert y.shape == (0, 2, 3, 3) and y.dtype == np.float32


@pytest.mark.parametrize("attempt", [1, 2])  # the geometry is cached per signature: errors are not
def test_conv_errors(attempt):
    with pytest.raises(InvalidArgument, match="do not agree"):
        conv(_r(1, 3, 5, 5), _r(2, 4, 3, 3))
    with pytest.raises(InvalidArgument, match="do not agree"):
        conv(_r(1, 4, 5, 5), _r(3, 2, 3, 3), group=2)
    with pytest.raises(InvalidArgument, match="kernel_shape"):
        conv(_r(1, 3, 5, 5), _r(2, 3, 3, 3), kernel_shape=[2, 2])
    with pytest.raises(InvalidArgument, match="auto_pad"):
        conv(_r(1, 3, 5, 5), _r(2, 3, 3, 3), auto_pad="BOGUS")
    with pytest.raises(InvalidArgument, match="rank"):
        conv(_r(1, 3, 5, 5), _r(2, 3, 3))
    with pytest.raises(InvalidArgument, match="strides has 1 values"):
        conv(_r(1, 3, 5, 5), _r(2, 3, 3, 3), strides=[2])
    with pytest.raises(InvalidArgument, match="pads has 2 values"):
        conv(_r(1, 3, 5, 5), _r(2, 3, 3, 3), pads=[1, 1])
    assert conv(_r(1, 3, 5, 5), _r(2, 3, 3, 3), pads=[1, 1, 1, 1]).shape == (1, 2, 5, 5)


CT_CASES = [
    ((1, 3, 5), (3, 2, 3), dict(strides=[2], output_padding=[1])),
    ((2, 2, 4, 5), (2, 3, 3, 3), dict(strides=[2, 2], pads=[1, 0, 1, 1])),
    ((1, 4, 3, 3), (4, 2, 3, 3), dict(group=2, strides=[3, 2], dilations=[2, 1])),
    ((1, 2, 3, 4), (2, 2, 3, 3), dict(strides=[2, 2], output_shape=[7, 9])),
    ((1, 2, 3, 4), (2, 2, 3, 3), dict(strides=[2, 2], auto_pad="SAME_UPPER")),
    ((1, 2, 2, 3, 2), (2, 1, 2, 2, 2), dict(strides=[2, 1, 2])),
]


@pytest.mark.parametrize("xs,ws,attrs", CT_CASES)
def test_conv_transpose_vs_ort(xs, ws, attrs):
    inputs = {"x": _r(*xs), "w": _r(*ws), "b": _r(ws[1] * attrs.get("group", 1))}
    check_vs_ort("ConvTranspose", inputs, attrs, opset=11)


def test_conv_transpose_float16():
    x, w = _r(1, 2, 3, 3), _r(2, 2, 2, 2)
    ref = conv_transpose(x, w, strides=[2, 2])
    y = conv_transpose(x.astype(np.float16), w.astype(np.float16), strides=[2, 2])
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=1e-2, atol=1e-2)


def test_conv_integer_per_channel_zero_point():
    x = rng.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)
    w = rng.integers(0, 255, (3, 2, 2, 2)).astype(np.uint8)
    xz = np.array(7, np.uint8)
    wz = np.array([1, 2, 3], np.uint8)
    got = run_onyx("ConvInteger", {"x": x, "w": w, "xz": xz, "wz": wz}, dict(pads=[1, 1, 0, 0]), opset=10)
    ref = conv(
        x.astype(np.float64) - 7,
        w.astype(np.float64) - wz.reshape(3, 1, 1, 1),
        pads=[1, 1, 0, 0],
    )
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ref.astype(np.int32))


def test_qlinear_conv_vs_ort():
    x = rng.integers(0, 255, (1, 3, 6, 6)).astype(np.uint8)
    w = rng.integers(-100, 100, (4, 3, 3, 3)).astype(np.int8)
    inputs = {
        "x": x,
        "xs": np.array(0.05, np.float32),
        "xz": np.array(120, np.uint8),
        "w": w,
        "ws": np.array([0.01, 0.02, 0.015, 0.03], np.float32),
        "wz": np.zeros(4, np.int8),
        "ys": np.array(0.2, np.float32),
        "yz": np.array(100, np.uint8),
        "b": rng.integers(-500, 500, 4).astype(np.int32),
    }
    got = run_onyx("QLinearConv", inputs, dict(pads=[1, 1, 1, 1]), opset=10)
    from tests.ops.nn._util import run_ort

    exp = run_ort("QLinearConv", inputs, dict(pads=[1, 1, 1, 1]), opset=10)
    assert got.dtype == exp.dtype
    assert np.abs(got.astype(int) - exp.astype(int)).max() <= 1


def test_deform_conv_zero_offset_equals_conv():
    x, w, b = _r(2, 4, 6, 7), _r(6, 2, 3, 3), _r(6)
    off = np.zeros((2, 2 * 9 * 2, 3, 3), np.float32)
    got = run_onyx(
        "DeformConv",
        {"x": x, "w": w, "off": off, "b": b},
        dict(group=2, offset_group=2, pads=[1, 0, 1, 0], strides=[2, 2]),
        opset=19,
    )
    ref = conv(x, w, b, group=2, pads=[1, 0, 1, 0], strides=[2, 2])
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_col2im_inverts_im2col_sum():
    # every pixel appears once when blocks do not overlap
    img = _r(1, 2, 4, 6)
    cols = img.reshape(1, 2, 2, 2, 3, 2).transpose(0, 1, 3, 5, 2, 4).reshape(1, 2 * 4, 6)
    got = run_onyx(
        "Col2Im",
        {"x": cols, "shape": np.array([4, 6], np.int64), "block": np.array([2, 2], np.int64)},
        dict(strides=[2, 2]),
        opset=18,
    )
    np.testing.assert_allclose(got, img)


def test_conv_blocked_im2col_matches(monkeypatch):
    from onyx.kernels import conv_gemm as conv_mod

    x, w, b = _r(2, 3, 11, 9), _r(4, 3, 3, 2), _r(4)
    for attrs in (dict(pads=[1, 0, 2, 1], strides=[2, 1]), dict(dilations=[2, 2], pads=[1, 1, 1, 1])):
        ref = conv(x, w, b, **attrs)
        monkeypatch.setattr(conv_mod, "COLS_BYTES", 200)
        got = conv(x, w, b, **attrs)
        monkeypatch.setattr(conv_mod, "COLS_BYTES", 64 << 20)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_conv_transpose_blocked_matches(monkeypatch):
    import onyx.ops.nn.conv_transpose as ct_mod

    x, w = _r(2, 4, 7, 5), _r(4, 3, 3, 3)
    for attrs in (
        dict(group=2, strides=[2, 3], pads=[1, 0, 0, 1]),
        dict(strides=[2, 2], output_shape=[16, 12]),
    ):
        b = _r(3 * attrs.get("group", 1))
        ref = conv_transpose(x, w, b, **attrs)
        monkeypatch.setattr(ct_mod, "_COLS_BYTES", 300)
        got = conv_transpose(x, w, b, **attrs)
        monkeypatch.setattr(ct_mod, "_COLS_BYTES", 64 << 20)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_conv_float16_frozen_weights_cached_conversion():
    x, w = _r(1, 8, 10, 10).astype(np.float16), _r(16, 8, 3, 3).astype(np.float16)
    ref = conv(x, w, pads=[1, 1, 1, 1])
    w.flags.writeable = False
    np.testing.assert_array_equal(conv(x, w, pads=[1, 1, 1, 1]), ref)
    np.testing.assert_array_equal(conv(x, w, pads=[1, 1, 1, 1]), ref)
