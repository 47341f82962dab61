"""onyx.kernels.conv: the compiled loops (onyx.kernels._conv) give what the numpy paths give, on edge
shapes, strides, dilations, pads, multipliers, strided inputs, NaN/inf, every activation, float32 and
float64; the C entry points refuse arrays that do not agree instead of reading past them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from onyx.kernels import conv as K
from onyx.kernels._loader import compiled
from onyx.ops.nn._common import window_geometry

ACTS = [
    K.NO_ACTIVATION,
    K.Activation(K.ActivationKind.RELU),
    K.Activation(K.ActivationKind.CLIP, -0.5, 0.75),
    K.Activation(K.ActivationKind.CLIP, 0.0, 6.0),
    K.Activation(K.ActivationKind.LEAKY_RELU, 0.1),
]
ACT_IDS = ["none", "relu", "clip", "relu6", "leaky"]
DTYPES = [np.float32, np.float64]


@pytest.fixture
def numpy_path(monkeypatch):
    """Runs a kernel function with the compiled module switched off (its numpy path)."""

    def run(fn, *args, **kwargs):
        with monkeypatch.context() as m:
            m.setattr(K, "compiled", lambda name: None)
            return fn(*args, **kwargs)

    return run


@pytest.fixture
def built():
    if compiled("_conv") is None:
        pytest.skip("onyx.kernels._conv was not built (or ONYX_NO_PERF is set): only the numpy path runs")


def _bound(absolute: np.ndarray, terms: int, dtype) -> np.ndarray:
    """The rounding error of a float sum of ``terms`` terms in another order (|terms| summing to
    ``absolute``): terms * eps * sum|terms|, plus a tiny absolute floor."""
    return terms * np.finfo(dtype).eps * absolute + np.finfo(dtype).tiny


def _close(got, want, absolute, terms, dtype):
    assert got.shape == want.shape and got.dtype == want.dtype
    both_nan = np.isnan(got) & np.isnan(want)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    same_inf = np.isinf(want)
    assert np.array_equal(got[same_inf], want[same_inf])
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same inf: checked above
        ok = both_nan | same_inf | (np.abs(got - want) <= _bound(absolute, terms, dtype))
    assert ok.all(), f"max error {np.nanmax(np.abs(got - want)[~ok])}"


# --- depthwise NCHW ------------------------------------------------------------------------------

DW_CASES = [
    # (batch, channels, mult, H, W, kernel, stride, dilation, pads (top, left, bottom, right))
    (1, 8, 1, 12, 12, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    (2, 5, 1, 13, 9, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),
    (1, 4, 3, 10, 11, (5, 3), (2, 1), (1, 2), (2, 0, 1, 3)),
    (3, 6, 2, 9, 9, (3, 3), (3, 3), (2, 2), (0, 0, 0, 0)),
    (1, 130, 1, 7, 7, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    (1, 3, 1, 1, 6, (1, 3), (1, 2), (1, 1), (0, 1, 0, 1)),
    (1, 2, 1, 1, 1, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),  # one pixel, all taps but one on padding
    (1, 1, 1, 5, 4, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0)),
    (2, 3, 1, 8, 8, (3, 3), (2, 2), (1, 1), (0, 0, 1, 1)),
]


def _dw(case, dtype, seed=0, bias=True):
    n, c, mult, h, w, k, s, d, pads = case
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, c, h, w)).astype(dtype)
    wt = rng.normal(size=(c * mult, 1) + k).astype(dtype)
    b = rng.normal(size=c * mult).astype(dtype) if bias else None
    pb, pe, out, _ = window_geometry((h, w), k, s, d, (pads[0], pads[1], pads[2], pads[3]), "NOTSET")
    return x, wt, b, dict(strides=s, dilations=d, pads_begin=pb, pads_end=pe, out_shape=out)


def _dw_abs(x, w, b, geo, numpy_path):
    """sum |terms| of every output (the error bound's scale), by the numpy path."""
    ab = None if b is None else np.abs(b)
    return numpy_path(K.depthwise_conv, np.abs(np.nan_to_num(x, posinf=0, neginf=0)), np.abs(w), ab, **geo)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", DW_CASES, ids=[f"case{i}" for i in range(len(DW_CASES))])
@pytest.mark.parametrize("act", ACTS, ids=ACT_IDS)
def test_depthwise_nchw_compiled_matches_numpy(case, act, dtype, built, numpy_path):
    x, w, b, geo = _dw(case, dtype)
    got = K.depthwise_conv(x, w, b, activation=act, **geo)
    want = numpy_path(K.depthwise_conv, x, w, b, activation=act, **geo)
    _close(got, want, _dw_abs(x, w, b, geo, numpy_path), math.prod(case[5]) + 1, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_depthwise_nchw_nan_inf_no_bias_and_strided_input(dtype, built, numpy_path):
    case = (2, 6, 2, 11, 10, (3, 3), (2, 1), (1, 1), (1, 1, 1, 1))
    x, w, b, geo = _dw(case, dtype, bias=False)
    x[0, 1, 3, 4] = np.nan
    x[1, 2, 5, 5] = np.inf
    x[1, 4, 0, 0] = -np.inf
    big = np.empty((2, 12, 11, 10), dtype=dtype)
    big[:, ::2] = x
    view = big[:, ::2]  # not contiguous
    assert not view.flags.c_contiguous
    for act in ACTS:
        got = K.depthwise_conv(view, w, None, activation=act, **geo)
        want = numpy_path(K.depthwise_conv, x, w, None, activation=act, **geo)
        _close(got, want, _dw_abs(x, w, None, geo, numpy_path), 10, dtype)
    assert np.isnan(got).any() and np.isinf(got).any()


def test_depthwise_nchw_empty_batch_and_threads(built, numpy_path):
    x, w, b, geo = _dw((0, 4, 1, 6, 6, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)), np.float32)
    assert K.depthwise_conv(x, w, b, **geo).shape == (0, 4, 6, 6)
    x, w, b, geo = _dw((2, 64, 1, 40, 40, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)), np.float32)
    one = K.depthwise_conv(x, w, b, threads=1, **geo)
    two = K.depthwise_conv(x, w, b, threads=2, **geo)
    np.testing.assert_array_equal(one, two)  # the same loops per plane, whichever thread runs them


def test_depthwise_nchw_numpy_path_other_ranks(numpy_path):
    """1-D and 3-D depthwise run in numpy (no compiled loop), by the same phase-plane algorithm."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 4, 5, 6))
    w = rng.normal(size=(3, 1, 2, 3, 2))
    pb, pe, out, _ = window_geometry((4, 5, 6), (2, 3, 2), (1, 2, 1), (1, 1, 2), (0, 1, 1, 1, 1, 0), "NOTSET")
    y = K.depthwise_conv(
        x, w, None, strides=(1, 2, 1), dilations=(1, 1, 2), pads_begin=pb, pads_end=pe, out_shape=out
    )
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pb[i], pe[i]) for i in range(3)])
    want = np.zeros_like(y)
    for kz, ky, kx in np.ndindex(2, 3, 2):
        sl = xp[:, :, kz : kz + out[0], ky : ky + 2 * (out[1] - 1) + 1 : 2, 2 * kx : 2 * kx + out[2]]
        want += sl * w[:, 0, kz, ky, kx][None, :, None, None, None]
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)


# --- depthwise channels-last -----------------------------------------------------------------------

NHWC_CASES = [
    # (batch, H, W, C, kernel, stride, pads (top, left, bottom, right))
    *[(1, 5, width, 16, (3, 3), (1, 1), (1, 1, 1, 1)) for width in range(1, 10)],
    *[(2, 7, width, 24, (3, 3), (2, 2), (0, 0, 1, 1)) for width in (1, 2, 5, 8)],
    (1, 9, 9, 7, (3, 3), (2, 2), (1, 1, 1, 1)),
    (1, 8, 11, 5, (3, 3), (1, 2), (2, 0, 0, 2)),
    (1, 6, 6, 3, (5, 5), (1, 1), (2, 2, 2, 2)),
    (2, 5, 7, 9, (1, 3), (2, 1), (0, 1, 0, 1)),
    (1, 1, 1, 4, (3, 3), (1, 1), (1, 1, 1, 1)),
    (1, 3, 3, 1, (3, 3), (1, 1), (0, 0, 0, 0)),
]


def _nhwc(case, dtype, seed=0):
    n, h, w, c, k, s, pads = case
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, h, w, c)).astype(dtype)
    wt = rng.normal(size=k + (c,)).astype(dtype)
    b = rng.normal(size=c).astype(dtype)
    return x, wt, b, dict(strides=s, pads=pads)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", NHWC_CASES, ids=[f"case{i}" for i in range(len(NHWC_CASES))])
@pytest.mark.parametrize("act", ACTS, ids=ACT_IDS)
def test_depthwise_nhwc_compiled_matches_numpy(case, act, dtype, built, numpy_path):
    x, w, b, geo = _nhwc(case, dtype)
    got = K.depthwise_conv2d_nhwc(x, w, b, activation=act, **geo)
    want = numpy_path(K.depthwise_conv2d_nhwc, x, w, b, activation=act, **geo)
    absolute = numpy_path(K.depthwise_conv2d_nhwc, np.abs(x), np.abs(w), np.abs(b), **geo)
    assert got.flags.c_contiguous
    _close(got, want, absolute, math.prod(case[4]) + 1, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_depthwise_nhwc_nan_inf_strided_and_no_bias(dtype, built, numpy_path):
    x, w, _, geo = _nhwc((2, 9, 12, 32, (3, 3), (1, 1), (1, 1, 1, 1)), dtype)
    x[0, 0, 0, 3] = np.nan  # an edge position
    x[0, 4, 5, 7] = np.nan  # an interior one
    x[1, 8, 11, 1] = np.inf
    x[1, 3, 3, 2] = -np.inf
    view = np.ascontiguousarray(x.transpose(0, 3, 1, 2)).transpose(0, 2, 3, 1)  # NHWC view of NCHW data
    assert not view.flags.c_contiguous
    absolute = numpy_path(
        K.depthwise_conv2d_nhwc, np.abs(np.nan_to_num(x, posinf=0, neginf=0)), np.abs(w), None, **geo
    )
    for act in ACTS:
        got = K.depthwise_conv2d_nhwc(view, w, None, activation=act, **geo)
        want = numpy_path(K.depthwise_conv2d_nhwc, x, w, None, activation=act, **geo)
        _close(got, want, absolute, 10, dtype)


def test_depthwise_nhwc_threads_give_the_same_result(built):
    x, w, b, geo = _nhwc((1, 56, 56, 24, (3, 3), (1, 1), (1, 1, 1, 1)), np.float32)
    one = K.depthwise_conv2d_nhwc(x, w, b, threads=1, **geo)
    two = K.depthwise_conv2d_nhwc(x, w, b, threads=2, **geo)
    np.testing.assert_array_equal(one, two)


# --- epilogues ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ACTS, ids=ACT_IDS)
@pytest.mark.parametrize("shape", [(6, 5, 7), (1, 1, 1), (4, 3, 16), (0, 3, 4)])
def test_conv_epilogue_compiled_matches_numpy(shape, act, dtype, built, numpy_path):
    rng = np.random.default_rng(2)
    planes, rows, width = shape
    y = rng.normal(size=shape).astype(dtype)
    y.flat[::7] = np.nan
    bias = rng.normal(size=3).astype(dtype)  # per plane i: bias[i % 3] (planes = images x channels)
    z = rng.normal(size=shape).astype(dtype)
    if y.size > 1:
        z.flat[1] = np.inf
    for b in (bias, None):
        for res in (z, None):
            got, want = y.copy(), y.copy()
            K.conv_epilogue(got, b, res, act)
            numpy_path(K.conv_epilogue, want, b, res, act)
            np.testing.assert_array_equal(got, want)  # the same sums in the same order


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ACTS, ids=ACT_IDS)
def test_conv_epilogue_from_a_wider_source_on_some_rows(act, dtype, built, numpy_path):
    rng = np.random.default_rng(3)
    y = rng.normal(size=(4, 9, 5)).astype(dtype)
    src = rng.normal(size=(4, 3, 8)).astype(dtype)  # rows 2..5 computed on rows of 8 (3 extra columns)
    src[1, 1, 2] = np.nan
    z = rng.normal(size=(4, 9, 5)).astype(dtype)
    b = rng.normal(size=4).astype(dtype)
    got, want = y.copy(), y.copy()
    K.conv_epilogue(got, b, z, act, source=src, rows=(2, 5))
    numpy_path(K.conv_epilogue, want, b, z, act, source=src, rows=(2, 5))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[:, :2], y[:, :2])  # other rows untouched
    np.testing.assert_array_equal(got[:, 5:], y[:, 5:])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ACTS, ids=ACT_IDS)
@pytest.mark.parametrize("rows,channels", [(1, 1), (7, 3), (200, 16), (65, 96), (3, 1030)])
def test_channels_last_epilogue_compiled_matches_numpy(rows, channels, act, dtype, built, numpy_path):
    rng = np.random.default_rng(4)
    y = rng.normal(size=(rows, channels)).astype(dtype)
    y.flat[::5] = np.nan
    b = rng.normal(size=channels).astype(dtype)
    z = rng.normal(size=(rows, channels)).astype(dtype)
    for bias in (b, None):
        for res in (None, z):
            got, want = y.copy(), y.copy()
            K.channels_last_epilogue(got, bias, res, act)
            numpy_path(K.channels_last_epilogue, want, bias, res, act)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ACTS, ids=ACT_IDS)
def test_channels_last_crop_epilogue_compiled_matches_numpy(act, dtype, built, numpy_path):
    rng = np.random.default_rng(5)
    rows, width, channels, row = 6, 5, 4, 7
    src = rng.normal(size=(rows, row * channels)).astype(dtype)
    src[2, 3] = np.inf
    bt = np.tile(rng.normal(size=channels).astype(dtype), width)
    for bias in (bt, None):
        got = np.empty((rows, width * channels), dtype)
        want = np.empty_like(got)
        K.channels_last_crop_epilogue(src, got, bias, act)
        numpy_path(K.channels_last_crop_epilogue, src, want, bias, act)
        np.testing.assert_array_equal(got, want)


# --- the activation value and the C entry points' checks -----------------------------------------


def test_activation_from_onnx():
    assert K.Activation.from_onnx("") == K.NO_ACTIVATION
    assert K.Activation.from_onnx("Relu").kind == K.ActivationKind.RELU
    assert K.Activation.from_onnx("Clip", [0.0, 6.0]) == K.Activation(K.ActivationKind.CLIP, 0.0, 6.0)
    assert K.Activation.from_onnx("Clip") == K.Activation(K.ActivationKind.CLIP, -math.inf, math.inf)
    assert K.Activation.from_onnx("LeakyRelu") == K.Activation(K.ActivationKind.LEAKY_RELU, 0.01)
    assert K.Activation.from_onnx("LeakyRelu", [0.2]).alpha == 0.2
    assert K.Activation.from_onnx("Sigmoid") is None
    y = np.array([-2.0, -0.5, 0.0, 3.0, 7.0, np.nan])
    K.Activation(K.ActivationKind.CLIP, -1.0, 6.0).apply_(y)
    np.testing.assert_array_equal(y, [-1.0, -0.5, 0.0, 3.0, 6.0, np.nan])


def test_c_entry_points_refuse_what_does_not_agree(built):
    mod = compiled("_conv")
    f = np.zeros
    x = f((1, 2, 5, 5), np.float32)
    with pytest.raises(ValueError, match="w"):  # weights for 3 channels' taps, not 2
        mod.depthwise_nchw(
            x,
            f((3, 9), np.float32),
            f(0, np.float32),
            f((1, 2, 5, 5), np.float32),
            3,
            3,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            0.0,
            0.0,
            1,
        )
    with pytest.raises(ValueError, match="larger"):  # an output bigger than the padded input
        mod.depthwise_nchw(
            x,
            f((2, 9), np.float32),
            f(0, np.float32),
            f((1, 2, 9, 9), np.float32),
            3,
            3,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            0.0,
            0.0,
            1,
        )
    with pytest.raises(TypeError):  # float64 weights with float32 data
        mod.depthwise_nchw(
            x,
            f((2, 9)),
            f(0, np.float32),
            f((1, 2, 5, 5), np.float32),
            3,
            3,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            0.0,
            0.0,
            1,
        )
    with pytest.raises(ValueError, match="activation"):
        mod.epilogue_nhwc(f((4, 3), np.float32), f(3, np.float32), None, 9, 0.0, 0.0, 1)
    with pytest.raises(ValueError, match="b"):
        mod.epilogue_nhwc(f((4, 3), np.float32), f(2, np.float32), None, 0, 0.0, 0.0, 1)
    with pytest.raises(ValueError, match="contiguous"):
        mod.depthwise_nhwc(
            f((1, 4, 4, 6), np.float32)[..., ::2],
            f((3, 3, 3), np.float32),
            f(3, np.float32),
            f((1, 4, 4, 3), np.float32),
            1,
            1,
            1,
            1,
            0,
            0.0,
            0.0,
            1,
        )
    with pytest.raises(ValueError, match="rows"):
        mod.epilogue_nchw(f((2, 3, 4), np.float32), 2, 2, None, f(0, np.float32), None, 0, 0.0, 0.0, 1)
    with pytest.raises(ValueError, match="shorter"):
        mod.epilogue_crop_nhwc(f((2, 3), np.float32), f((2, 4), np.float32), f(0, np.float32), 0, 0.0, 0.0, 1)
    with pytest.raises(TypeError, match="writable"):
        y = f((4, 3), np.float32)
        y.flags.writeable = False
        mod.epilogue_nhwc(y, f(3, np.float32), None, 0, 0.0, 0.0, 1)
