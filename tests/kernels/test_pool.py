"""onyx.kernels.pool: the compiled max pool (onyx.kernels._pool) gives exactly what the numpy path
gives (a max is exact) on edge shapes, strides, dilations, pads, ceil mode, strided inputs, NaN/inf,
float32, float64, uint8 and int8; the C entry point refuses arrays that do not agree."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.kernels import pool as P
from onyx.kernels._loader import compiled
from onyx.ops.nn._common import window_geometry

CASES = [
    # (N, C, H, W, kernel, strides, dilations, pads, ceil_mode)
    (1, 3, 17, 15, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False),
    (2, 4, 16, 16, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), False),
    (1, 2, 9, 11, (3, 2), (1, 3), (2, 1), (0, 1, 2, 0), True),
    (1, 1, 1, 1, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), False),
    (1, 1, 1, 1, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), False),
    (2, 3, 7, 5, (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), True),
    (1, 2, 8, 8, (5, 5), (3, 3), (1, 1), (2, 2, 2, 2), True),
    (1, 64, 112, 112, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False),  # ResNet's stem pool
    (0, 3, 5, 5, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), False),
]


@pytest.fixture
def built():
    if compiled("_pool") is None:
        pytest.skip("onyx.kernels._pool was not built (or ONYX_NO_PERF is set): only the numpy path runs")


def _geo(case):
    n, c, h, w, k, s, d, pads, ceil = case
    pb, _, out, _ = window_geometry((h, w), k, s, d, pads, "NOTSET", ceil)
    return dict(kernel=k, strides=s, dilations=d, pads_begin=pb, out_shape=out)


def _numpy(x, geo):
    return P.window_reduce(
        x,
        geo["kernel"],
        geo["strides"],
        geo["dilations"],
        geo["pads_begin"],
        geo["out_shape"],
        np.maximum,
        -np.inf,
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_max_pool2d_compiled_matches_numpy(case, dtype, built):
    rng = np.random.default_rng(0)
    x = rng.normal(size=case[:4]).astype(dtype)
    if x.size > 3:
        x.flat[:: max(1, x.size // 5)] = np.nan
        x.flat[1] = np.inf
        x.flat[2] = -np.inf
    geo = _geo(case)
    got = P.max_pool2d(x, **geo)
    want = _numpy(x, geo)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_max_pool2d_compiled_eight_bit_matches_numpy(case, dtype, built):
    """uint8 / int8 (quantized models' MaxPool): the extremes of the type included; a window with no input
    position gives the type's lowest value."""
    rng = np.random.default_rng(2)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, case[:4]).astype(dtype)
    if x.size > 3:
        x.flat[0], x.flat[1] = info.max, info.min
    geo = _geo(case)
    got = P.max_pool2d(x, **geo)
    want = P.window_reduce(
        x, geo["kernel"], geo["strides"], geo["dilations"], geo["pads_begin"], geo["out_shape"], np.maximum,
        P.lowest(x.dtype),
    )  # fmt: skip
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, want)
    corner = dict(kernel=(1, 1), strides=(1, 1), dilations=(1, 1), pads_begin=(1, 1), out_shape=(3, 3))
    assert P.max_pool2d(np.full((1, 1, 1, 1), info.max, dtype), **corner)[0, 0, 0, 0] == info.min


def test_max_pool2d_strided_input_threads_and_all_nan(built):
    rng = np.random.default_rng(1)
    base = rng.normal(size=(2, 8, 20, 20)).astype(np.float32)
    view = base[:, ::2, :, 1:19]
    geo = _geo((2, 4, 20, 18, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False))
    want = _numpy(view, geo)
    np.testing.assert_array_equal(P.max_pool2d(view, threads=1, **geo), want)
    np.testing.assert_array_equal(P.max_pool2d(view, threads=2, **geo), want)
    nan = np.full((1, 1, 4, 4), np.nan, np.float32)
    assert np.isnan(
        P.max_pool2d(nan, **_geo((1, 1, 4, 4, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), False)))
    ).all()


def test_window_without_input_gives_lowest(built):
    # pads larger than the kernel reach: the corner windows see no input (ONNX forbids such pads,
    # the kernel must still not read outside x)
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    geo = dict(kernel=(1, 1), strides=(1, 1), dilations=(1, 1), pads_begin=(1, 1), out_shape=(4, 4))
    got = P.max_pool2d(x, **geo)
    np.testing.assert_array_equal(got, _numpy(x, geo))
    assert got[0, 0, 0, 0] == -np.inf and got[0, 0, 1, 1] == 0


def test_numpy_path_other_dtypes_and_ranks():
    x = np.array([[[5, -3, 7, 1, -8]]], dtype=np.int8)  # 1-D, int8: the lowest pads, never wins
    y = P.max_pool2d(x, kernel=(2,), strides=(2,), dilations=(1,), pads_begin=(1,), out_shape=(3,))
    np.testing.assert_array_equal(y, [[[5, 7, 1]]])


def test_c_entry_point_refuses_what_does_not_agree(built):
    mod = compiled("_pool")
    x = np.zeros((1, 2, 5, 5), np.float32)
    with pytest.raises(ValueError, match="y"):
        mod.max_pool2d(x, np.zeros((1, 3, 2, 2), np.float32), 2, 2, 2, 2, 1, 1, 0, 0, 1)
    with pytest.raises(TypeError):
        mod.max_pool2d(x, np.zeros((1, 2, 2, 2)), 2, 2, 2, 2, 1, 1, 0, 0, 1)
    with pytest.raises(ValueError, match="positive"):
        mod.max_pool2d(x, np.zeros((1, 2, 2, 2), np.float32), 0, 2, 2, 2, 1, 1, 0, 0, 1)
    with pytest.raises(ValueError, match="contiguous"):
        mod.max_pool2d(x[..., ::2], np.zeros((1, 2, 2, 1), np.float32), 2, 2, 2, 2, 1, 1, 0, 0, 1)
